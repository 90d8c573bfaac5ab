"""Connects to Lore's tool server with the official Python MCP SDK, 2.x line,
in the mode it is given (`auto` negotiates the sessionless 2026-07-28
revision, `legacy` a session-era one), and prints what it saw as JSON.

Usage: python client_v2.py MODE URL KEY TOOL ARGS_JSON [RESOURCE_URI]
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(mode, url, key, tool, args, resource):
    http = httpx2.AsyncClient(headers={"x-api-key": key})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
        tools = await client.list_tools()
        called = await client.call_tool(tool, json.loads(args))
        out = {
            "protocol_version": client.protocol_version,
            "tools": sorted(t.name for t in tools.tools),
            "call": {"is_error": called.is_error, "structured": called.structured_content},
        }
        if resource:
            read_result = await client.read_resource(resource)
            out["resource"] = json.loads(read_result.contents[0].text)
        resources = await client.list_resources()
        out["resources"] = sorted(str(r.uri) for r in resources.resources)
        print(json.dumps(out))


if __name__ == "__main__":
    mode, url, key, tool, args = sys.argv[1:6]
    resource = sys.argv[6] if len(sys.argv) > 6 else None
    asyncio.run(main(mode, url, key, tool, args, resource))
