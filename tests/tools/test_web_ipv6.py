"""web_fetch judges every IPv6 form that embeds an IPv4 address by the address it embeds."""

from __future__ import annotations

import ipaddress

import pytest

from catbuddy.tools.base import ToolContext
from catbuddy.tools.registry import run_tool
from catbuddy.tools.web import WebFetchTool, refused_reason

METADATA = "169.254.169.254"


@pytest.mark.parametrize(
    ("address", "embedded"),
    [
        ("2002:a9fe:a9fe::1", METADATA),  # 6to4
        ("2002:7f00:1::", "127.0.0.1"),
        ("2002:c0a8:0101::1", "192.168.1.1"),
        ("64:ff9b::a9fe:a9fe", METADATA),  # NAT64, well-known prefix
        ("64:ff9b::10.0.0.1", "10.0.0.1"),
        ("64:ff9b:1:a9fe:a9:fe00::", METADATA),  # NAT64 local-use /48 (RFC 6052 layout)
        ("::ffff:169.254.169.254", METADATA),  # IPv4-mapped
        ("::ffff:7f00:1", "127.0.0.1"),
        ("::169.254.169.254", METADATA),  # IPv4-compatible
        ("::10.1.2.3", "10.1.2.3"),
        ("2001:0:a9fe:a9fe::1", METADATA),  # Teredo server
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),  # Teredo client (obfuscated in the address)
    ],
)
def test_an_embedded_private_address_is_refused(address: str, embedded: str) -> None:
    reason = refused_reason(ipaddress.ip_address(address))
    assert reason is not None and f"IPv4 {embedded} inside" in reason


def test_every_layout_of_the_local_use_nat64_prefix_is_judged() -> None:
    assert refused_reason(ipaddress.ip_address("64:ff9b:1::a9fe:a9fe")) is not None  # the /96 layout


@pytest.mark.parametrize("address", ["2002:808:808::1", "64:ff9b::8.8.8.8", "::ffff:8.8.8.8", "::8.8.4.4"])
def test_an_embedded_public_address_is_judged_public(address: str) -> None:
    assert refused_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("address", ["::1", "::", "fe80::1", "fc00::1", "ff02::1"])
def test_plain_ipv6_private_forms_stay_refused(address: str) -> None:
    assert refused_reason(ipaddress.ip_address(address)) is not None


async def test_the_tool_refuses_the_6to4_metadata_address_before_connecting(ctx: ToolContext) -> None:
    result = await run_tool(WebFetchTool(), {"url": "http://[2002:a9fe:a9fe::1]/latest/meta-data/"}, ctx)
    assert result.is_error and "169.254.169.254" in result.content and "allow_private_network" in result.content
