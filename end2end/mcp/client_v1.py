"""Connects to Lore's tool server with the official Python MCP SDK, 1.x line
(session-era revisions), and prints what it saw as one JSON object.

Usage: python client_v1.py URL KEY TOOL ARGS_JSON [RESOURCE_URI]
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url, key, tool, args, resource):
    async with streamablehttp_client(url, headers={"x-api-key": key}) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            called = await session.call_tool(tool, json.loads(args))
            out = {
                "protocol_version": init.protocolVersion,
                "session_id": session_id(),
                "tools": sorted(t.name for t in tools.tools),
                "call": {"is_error": called.isError, "structured": called.structuredContent},
            }
            if resource:
                read_result = await session.read_resource(resource)
                out["resource"] = json.loads(read_result.contents[0].text)
            resources = await session.list_resources()
            out["resources"] = sorted(str(r.uri) for r in resources.resources)
            print(json.dumps(out))


if __name__ == "__main__":
    url, key, tool, args = sys.argv[1:5]
    resource = sys.argv[5] if len(sys.argv) > 5 else None
    asyncio.run(main(url, key, tool, args, resource))
