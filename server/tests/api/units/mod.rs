//! The unit tests of the crates above `engine` (`server`'s library,
//! `lore-toolserver`, `lore-openapi`, `app`), one module per source module
//! tested. They live in this one binary rather than in each library because
//! a library with unit tests is compiled twice (once as a library, once as
//! its own test harness), and every change in `engine` would recompile all
//! four a second time and link four more test binaries: see
//! `docs/decisions.md`, "One test binary per floor".

mod app_prompt;
mod app_routes;
mod app_users;
mod openapi_document;
mod server_answer;
mod server_codes;
mod server_config;
mod server_data;
mod server_error;
mod server_json;
mod server_layers;
mod server_mcp;
mod server_openapi;
mod server_output;
mod server_rpc;
mod server_telemetry;
mod toolserver_lists;
mod toolserver_naming;
mod toolserver_root;
mod toolserver_schema;
