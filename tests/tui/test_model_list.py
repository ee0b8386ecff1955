"""`/model` without a name lists what the endpoint serves (GET /models), the configured models first,
and says plainly when the endpoint has no list; `/clear` is `/new`."""

from __future__ import annotations

from dataclasses import replace

from helpers import texts, wait_for

from catbuddy.config import ModelSpec, Settings
from catbuddy.tui.screens.choice import ChoicePicker
from catbuddy.tui.widgets.messages import NoticeBlock

SIZE = (100, 32)


async def run_command(app, pilot, text: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(text)
    await pilot.press("enter")


def endpoint_settings(llm) -> Settings:
    return Settings(model="scripted", base_url=llm.base_url, api_key="k", max_retries=0)


async def test_model_lists_the_endpoint_models_after_the_configured_ones(fake_app, scripted_llm_factory):
    llm = scripted_llm_factory(models=["scripted", "zeta-coder", "alpha-chat"])
    settings = replace(endpoint_settings(llm), models={"local-coder": ModelSpec(32_768, 4_096)})
    app, holder = fake_app(settings=settings)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker), what="model picker")
        assert [value for value, _ in app.screen.choices] == [
            "scripted",
            "local-coder",
            "alpha-chat",
            "zeta-coder",
        ]
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: holder["loop"].model == "alpha-chat", what="model switched")


async def test_model_says_when_the_endpoint_has_no_list(fake_app, scripted_llm_factory):
    llm = scripted_llm_factory()
    llm.list_models = False
    settings = replace(endpoint_settings(llm), models={"local-coder": ModelSpec(32_768, 4_096)})
    app, _ = fake_app(settings=settings)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker), what="model picker")
        assert [value for value, _ in app.screen.choices] == ["scripted", "local-coder"]
        notices = texts(app, NoticeBlock)
        assert any("no model list" in text and "HTTP 404" in text for text in notices), notices


async def test_clear_starts_a_new_session_like_new(fake_app):
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/clear")
        await wait_for(pilot, lambda: any("New session" in t for t in texts(app, NoticeBlock)), what="notice")
        assert holder["loop"].session_id == "s-20250101-0002"
