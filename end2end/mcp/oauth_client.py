"""Signs in to Lore's tool server over OAuth with the official Python MCP SDK
(either line: 1.x over a session, 2.x in the sessionless revision), then
calls the `answer` tool, and prints what it saw as one JSON object.

The person's part happens elsewhere: the script prints the authorization URL
as `{"authorize": URL}` and reads the redirect's query back from stdin as
one JSON line (`{"code": ..., "state": ..., "iss": ...}`).

Usage: python oauth_client.py URL CALLBACK QUESTION [CLIENT_METADATA_URL]
(without a metadata document's URL, the client registers dynamically)
"""

import asyncio
import json
import sys

from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

try:
    import httpx2  # the 2.x line's HTTP client

    LINE = 2
except ImportError:
    LINE = 1


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


async def redirect(url: str) -> None:
    print(json.dumps({"authorize": url}), flush=True)


async def callback():
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    back = json.loads(line)
    if LINE == 2:
        from mcp.shared.auth import AuthorizationCodeResult

        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))
    return back["code"], back.get("state")


def rating(answered):
    """The arguments of `rate_answer` for the answer the tool gave."""
    trace_id = ((answered or {}).get("feedback") or {}).get("trace_id", "")
    return {"trace_id": trace_id, "helpful": False, "comment": "It should name the guide's page."}


async def answer_v1(url, auth, question):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url, auth=auth) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            called = await session.call_tool("answer", {"question": question})
            rated = await session.call_tool("rate_answer", rating(called.structuredContent))
            return init.protocolVersion, called.isError, called.structuredContent, rated.structuredContent


async def answer_v2(url, auth, question):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(auth=auth)
    async with http, Client(streamable_http_client(url, http_client=http), mode="auto", cache=None) as client:
        called = await client.call_tool("answer", {"question": question})
        rated = await client.call_tool("rate_answer", rating(called.structured_content))
        return client.protocol_version, called.is_error, called.structured_content, rated.structured_content


async def main(url, callback_url, question, metadata_url):
    storage = Memory()
    metadata = OAuthClientMetadata(
        client_name=f"Python SDK {LINE}.x",
        redirect_uris=[callback_url],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=metadata_url,
    )
    run = answer_v2 if LINE == 2 else answer_v1
    protocol_version, is_error, structured, rated = await run(url, auth, question)
    print(
        json.dumps(
            {
                "line": LINE,
                "protocol_version": protocol_version,
                "client_id": storage.client_info.client_id if storage.client_info else None,
                "call": {"is_error": is_error, "structured": structured},
                "rated": rated,
            }
        )
    )


if __name__ == "__main__":
    url, callback_url, question = sys.argv[1:4]
    metadata_url = sys.argv[4] if len(sys.argv) > 4 else None
    asyncio.run(main(url, callback_url, question, metadata_url))
