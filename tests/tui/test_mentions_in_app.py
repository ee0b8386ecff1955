"""@-mentions in the app with the real loop: a mentioned file reaches the model with the message, and one
outside the work root is attached only after the approval dialog says yes."""

from __future__ import annotations

from helpers import texts, wait_for

from catbuddy.config import Settings
from catbuddy.testing.script import Reply
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.screens.approval import ApprovalScreen
from catbuddy.tui.widgets.messages import UserBlock
from catbuddy.tui.widgets.reply import AssistantBlock

SIZE = (100, 32)


def real_app(workspace, llm) -> CatbuddyApp:
    settings = Settings(model="scripted", base_url=llm.base_url, api_key="test", max_retries=0)
    return CatbuddyApp(workspace, settings, approval_arm_delay=0.0)


async def send(app, pilot, text: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(text)
    await pilot.press("enter")


async def test_a_mentioned_file_goes_with_the_message(workspace, scripted_llm) -> None:
    (workspace.work_root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    scripted_llm.push(Reply.text("it adds"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "explain @calc.py")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["it adds"], what="reply")
        assert texts(app, UserBlock) == ["explain @calc.py"]  # shown as typed
    assert "     1\tdef add(a, b):" in scripted_llm.requests[0].messages[-1]["content"]


async def test_an_outside_mention_asks_in_the_approval_dialog(
    workspace, scripted_llm, tmp_path_factory
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "notes.txt"
    outside.write_text("the private notes\n")
    scripted_llm.push(Reply.text("summarised"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, f"summarise @{outside}")
        screen = await wait_for(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen, what="dialog"
        )
        assert str(outside.resolve()) in screen.request.summary
        await pilot.press("1")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["summarised"], what="reply")
    assert "the private notes" in scripted_llm.requests[0].messages[-1]["content"]
