//! `lore bench mcp`: the tool server over HTTP on loopback, against the
//! same calls made directly.
//!
//! 1. Lore serves in this process with a generated site indexed, `--tables`
//!    exported tables (the first holding 1,000 records) and a super user's
//!    key with the `mcp`, `operations` and `retrieve` scopes.
//! 2. Measured, one client, every request awaited:
//!    - `search_by_id` as a `tools/call` on `/operation/mcp` against the
//!      same operation on `POST /operation`, and `retrieve` as a
//!      `tools/call` on `/mcp` against `POST /retrieve`: p50/p95 and the
//!      ratio of the p50s (the tool server's overhead);
//!    - `tools/list` on `/mcp` with the exported tables listed;
//!    - `--sessions` sessions, each with its push channel open (memory per
//!      session: the process's resident memory before and after, over the
//!      sessions: client and server both live in this process, so it is an
//!      upper bound), then `--changes` role changes that alter only one
//!      session's user: the time from the change to its list_changed
//!      arriving on that session's channel.
//!
//! Goals of the issue: overhead ≤ 1.2× the direct call at p50; a
//! list_changed delivered in ≤ 100 ms p95; ≤ 50 KiB per idle session.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::audit::Actor;
use engine::{Lore, Settings};
use futures::StreamExt;
use serde_json::{json, Value};

use super::{bench_site, build_profile, index_site, millis, percentile, tempfile_dir, write_record, Serving};

pub struct McpOptions {
    pub requests: usize,
    pub tables: usize,
    pub sessions: usize,
    pub changes: usize,
    pub pages: usize,
    pub out: Option<PathBuf>,
}

const OVERHEAD_GOAL: f64 = 1.2;
const LIST_CHANGED_P95_GOAL_MS: f64 = 100.0;
const SESSION_GOAL_KIB: f64 = 50.0;

fn spread(mut samples: Vec<f64>) -> Value {
    samples.sort_by(f64::total_cmp);
    json!({"p50_ms": percentile(&samples, 50.0), "p95_ms": percentile(&samples, 95.0), "n": samples.len()})
}

/// This process's resident memory, in KiB.
fn resident_kib() -> f64 {
    super::process_kib("VmRSS:")
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn post(
        &self,
        path: &str,
        key: &str,
        session: Option<&str>,
        body: &Value,
    ) -> anyhow::Result<Value> {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", key)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("{path} answered {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A session on `path`; its id.
    async fn initialize(&self, path: &str, key: &str) -> anyhow::Result<String> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", key)
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .send()
            .await?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .context("initialize answered no session")?;
        response.bytes().await?;
        Ok(session)
    }

    /// Milliseconds of one tools/call; fails on an error result.
    async fn tool(
        &self,
        path: &str,
        key: &str,
        session: &str,
        name: &str,
        args: &Value,
    ) -> anyhow::Result<f64> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}});
        let started = Instant::now();
        let reply = self.post(path, key, Some(session), &body).await?;
        let elapsed = millis(started.elapsed());
        if reply["result"]["isError"] != false {
            bail!("{name} over MCP: {reply}");
        }
        Ok(elapsed)
    }

    async fn direct(&self, path: &str, key: &str, body: &Value) -> anyhow::Result<f64> {
        let started = Instant::now();
        self.post(path, key, None, body).await?;
        Ok(millis(started.elapsed()))
    }

    /// The push channel of `session`, as a byte stream.
    async fn channel(
        &self,
        key: &str,
        session: &str,
    ) -> anyhow::Result<impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>>> {
        let response = self
            .http
            .get(format!("{}/mcp", self.base))
            .header("x-api-key", key)
            .header("mcp-session-id", session)
            .header("accept", "text/event-stream")
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("the push channel answered {}", response.status());
        }
        Ok(response.bytes_stream())
    }
}

async fn user(lore: &Lore, name: &str, permission: Value, scopes: &[&str]) -> anyhow::Result<String> {
    engine::appdb::users::add_role(lore, &Actor::System, name, &permission).await?;
    engine::appdb::users::add_user(lore, &Actor::System, name, name, true).await?;
    let (_, key) = engine::keys::create(
        lore,
        &Actor::System,
        engine::keys::NewKey {
            name: name.into(),
            kind: "secret".into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            user: Some(name.into()),
            ..engine::keys::NewKey::default()
        },
    )
    .await?;
    Ok(key)
}

fn reads(tables: &[usize]) -> Value {
    let tables: serde_json::Map<String, Value> = tables
        .iter()
        .map(|t| (format!("t{t}"), json!({"read": true, "insert": false, "update": false, "delete": false})))
        .collect();
    json!({"bench": {"tables": tables}})
}

pub async fn mcp(mut settings: Settings, options: McpOptions) -> anyhow::Result<()> {
    let site = bench_site::start(options.pages).await?;
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    settings.vectors.uri = None;
    settings.database.url = None;
    settings.ingest.allow_private_addresses = true;
    settings.mcp.operations = Some(Default::default());
    settings.mcp.tool_calls_per_minute = u32::MAX;
    let lore = Lore::open(settings).await?;
    crate::commands::models::ensure(&lore, false).await?;
    let measured = run(&lore, &site, &options).await;
    let _ = std::fs::remove_dir_all(&data);
    let record = measured?;
    print_summary(&record);
    let path = write_record(&options.out, "mcp.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

async fn run(lore: &Lore, site: &str, options: &McpOptions) -> anyhow::Result<Value> {
    index_site(lore, site, options.pages).await?;

    println!("Exporting {} tables …", options.tables);
    let schema: String = (0..options.tables.max(1))
        .map(|t| {
            format!("type T{t} @table(database: \"bench\", table: \"t{t}\") @export(name: \"t{t}\") {{\n id: Long @primaryKey\n name: String\n}}\n")
        })
        .collect();
    engine::appdb::schema::apply(lore, &Actor::System, &schema).await?;
    let root = user(lore, "root", json!({"super_user": true}), &["mcp", "operations", "retrieve"]).await?;
    let records: Vec<Value> = (0..1000).map(|i| json!({"id": i, "name": format!("record {i}")})).collect();
    let principal = engine::appdb::users::principal(lore, "root").await?;
    engine::operations::dispatch(
        lore,
        &principal,
        json!({"operation": "insert", "database": "bench", "table": "t0", "records": records}),
    )
    .await?;

    let serving = Serving::start(lore).await?;
    let base = serving.base.clone();
    let client = Client { http: reqwest::Client::builder().pool_max_idle_per_host(2048).build()?, base };
    let measured = measure(lore, &client, &root, options).await;
    serving.stop().await;
    measured
}

async fn measure(lore: &Lore, client: &Client, root: &str, options: &McpOptions) -> anyhow::Result<Value> {
    let ops = client.initialize("/operation/mcp", root).await?;
    let app = client.initialize("/mcp", root).await?;
    let queries = super::queries();

    println!("search_by_id and retrieve, directly and over MCP ({} each) …", options.requests);
    let (mut by_id_direct, mut by_id_mcp, mut retrieve_direct, mut retrieve_mcp) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..options.requests {
        let id = (i * 7919) % 1000;
        let args = json!({"database": "bench", "table": "t0", "ids": [id], "get_attributes": ["*"]});
        let mut body = args.clone();
        body["operation"] = json!("search_by_id");
        by_id_direct.push(client.direct("/operation", root, &body).await?);
        by_id_mcp.push(client.tool("/operation/mcp", root, &ops, "search_by_id", &args).await?);
        let query = &queries[i % queries.len()];
        retrieve_direct.push(client.direct("/retrieve", root, &json!({"query": query})).await?);
        retrieve_mcp.push(client.tool("/mcp", root, &app, "retrieve", &json!({"query": query})).await?);
    }

    println!("tools/list with {} exported tables …", options.tables);
    let mut list = Vec::new();
    let mut listed = 0;
    for _ in 0..options.requests.clamp(1, 200) {
        let started = Instant::now();
        let reply = client
            .post("/mcp", root, Some(&app), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await?;
        list.push(millis(started.elapsed()));
        listed = reply["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
    }

    println!("{} sessions with open push channels …", options.sessions);
    let steady = user(lore, "steady", reads(&[0]), &["mcp"]).await?;
    let watched = user(lore, "watched", reads(&[0]), &["mcp"]).await?;
    let before = resident_kib();
    let mut channels = Vec::with_capacity(options.sessions);
    for _ in 1..options.sessions.max(2) {
        let session = client.initialize("/mcp", &steady).await?;
        channels.push(client.channel(&steady, &session).await?);
    }
    let session = client.initialize("/mcp", &watched).await?;
    let mut watched_channel = Box::pin(client.channel(&watched, &session).await?);
    // Let every channel register with the hub.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = resident_kib();
    let open = lore_toolserver::ToolServer::open(lore.clone()).hub().open_channels();
    let per_session_kib = (after - before) / options.sessions.max(2) as f64;

    println!("{} role changes that alter one session's tools …", options.changes);
    let admin = engine::appdb::Principal::Admin { account_id: "bench".into() };
    let mut delivered = Vec::new();
    let mut missed = 0;
    for change in 0..options.changes {
        let tables: &[usize] = if change % 2 == 0 { &[0, 1] } else { &[0] };
        let started = Instant::now();
        engine::operations::dispatch(
            lore,
            &admin,
            json!({"operation": "alter_role", "id": "watched", "permission": reads(tables)}),
        )
        .await?;
        let arrived = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(chunk)) = watched_channel.next().await {
                // The resources' list changes too; its notification may
                // come in a chunk of its own, read (and passed over) here
                // on the next change.
                if String::from_utf8_lossy(&chunk).contains("notifications/tools/list_changed") {
                    return true;
                }
            }
            false
        })
        .await;
        match arrived {
            Ok(true) => delivered.push(millis(started.elapsed())),
            _ => missed += 1,
        }
    }
    drop(channels);

    let p50 = |samples: &[f64]| {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        percentile(&sorted, 50.0)
    };
    Ok(json!({
        "benchmark": "mcp",
        "build": build_profile(),
        "requests": options.requests,
        "search_by_id": {"direct": spread(by_id_direct.clone()), "mcp": spread(by_id_mcp.clone()),
                         "overhead_p50": p50(&by_id_mcp) / p50(&by_id_direct)},
        "retrieve": {"direct": spread(retrieve_direct.clone()), "mcp": spread(retrieve_mcp.clone()),
                     "overhead_p50": p50(&retrieve_mcp) / p50(&retrieve_direct)},
        "tools_list": {"tables": options.tables, "tools": listed, "latency": spread(list)},
        "sessions": {"opened": options.sessions.max(2), "channels_open": open,
                     "resident_kib_before": before, "resident_kib_after": after,
                     "kib_per_session": per_session_kib},
        "list_changed": {"changes": options.changes, "missed": missed, "latency": spread(delivered)},
        "goals": {"overhead_p50": OVERHEAD_GOAL, "list_changed_p95_ms": LIST_CHANGED_P95_GOAL_MS,
                  "kib_per_session": SESSION_GOAL_KIB},
    }))
}

fn print_summary(record: &Value) {
    let pair = |v: &Value| {
        format!("{:.2}/{:.2} ms", v["p50_ms"].as_f64().unwrap_or(0.0), v["p95_ms"].as_f64().unwrap_or(0.0))
    };
    println!();
    for call in ["search_by_id", "retrieve"] {
        let figures = &record[call];
        println!(
            "{call:<14} direct {:>18}   over MCP {:>18}   overhead {:.2}× (goal ≤ {OVERHEAD_GOAL}×)",
            pair(&figures["direct"]),
            pair(&figures["mcp"]),
            figures["overhead_p50"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "tools/list      {} tools: {}",
        record["tools_list"]["tools"],
        pair(&record["tools_list"]["latency"])
    );
    println!(
        "sessions        {} open: {:.1} KiB each (goal ≤ {SESSION_GOAL_KIB} KiB; client and server in one process)",
        record["sessions"]["channels_open"],
        record["sessions"]["kib_per_session"].as_f64().unwrap_or(0.0)
    );
    println!(
        "list_changed    {} (missed {}; goal p95 ≤ {LIST_CHANGED_P95_GOAL_MS} ms)",
        pair(&record["list_changed"]["latency"]),
        record["list_changed"]["missed"]
    );
}
