//! `lore bench replicas`: what the vectors on an object store cost, and
//! what a second replica changes, over HTTP on loopback.
//!
//! For each vector store, a local directory and an S3-compatible object
//! store (`--s3-endpoint`; `scripts/bench-replicas` starts moto's server),
//! on a fresh PostgreSQL database: a generated site is crawled and indexed,
//! a key made and the generation role bound; two replicas (two `Lore`
//! handles with their own caches, each serving on its own port, in this
//! process) answer each grounded question once, so that both hold it in
//! their answer cache. Then, with one replica and with two (requests
//! dealt round robin), `/retrieve` and cached `/answer` are measured at
//! `--clients` concurrent clients: requests per second and p95.
//!
//! The two replicas share this machine's cores with each other and with the
//! clients: the second replica shows the cost of coordination (two caches,
//! the shared database), not the capacity a second machine adds.

use std::sync::Arc;

use engine::{Lore, Settings};
use serde_json::{json, Value};

use super::answer::{concurrent, Api, QUESTIONS};
use super::operations::fresh_postgres;
use super::{
    answer_key, bench_site, bind_generation, build_profile, index_site, tempfile_dir, write_record, Serving,
    QUERIES,
};

pub struct ReplicasOptions {
    pub pages: usize,
    /// Requests per measurement.
    pub requests: usize,
    pub clients: usize,
    pub llm_endpoint: String,
    pub llm_model: String,
    /// The PostgreSQL server (a fresh database is made on it per store).
    pub postgres_url: String,
    /// An S3-compatible endpoint; credentials and region from `AWS_*` as
    /// the AWS SDKs read them (region `us-east-1` when unset).
    pub s3_endpoint: String,
    pub out: Option<std::path::PathBuf>,
}

/// One measured cell: a store, a replica count, an endpoint.
struct Cell {
    store: &'static str,
    replicas: usize,
    endpoint: &'static str,
    per_second: f64,
    p50_ms: f64,
    p95_ms: f64,
}

pub async fn replicas(settings: Settings, options: ReplicasOptions) -> anyhow::Result<()> {
    let site = bench_site::start(options.pages).await?;
    let mut cells = Vec::new();
    for store in ["local directory", "object store (S3)"] {
        println!("\n{store}:");
        let (database, name, admin) = fresh_postgres(&options.postgres_url).await?;
        let vectors = match store {
            "local directory" => {
                engine::index::lance::Location::new(tempfile_dir()?.join("lancedb").display().to_string())
            }
            _ => s3_location(&options.s3_endpoint).await?,
        };
        let measured = on_store(&settings, &options, &site, store, &database, &vectors).await;
        use sea_orm::ConnectionTrait;
        let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        if !vectors.is_object_store() {
            let _ = std::fs::remove_dir_all(
                std::path::Path::new(&vectors.uri).parent().unwrap_or(std::path::Path::new(&vectors.uri)),
            );
        }
        cells.extend(measured?);
    }
    print_table(&cells, options.clients);
    let record = json!({
        "benchmark": "replicas",
        "at": chrono::Utc::now().to_rfc3339(),
        "build": build_profile(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "transport": "HTTP/1.1 on 127.0.0.1; the replicas and the clients in one process",
        "object_store": "moto's S3 server on 127.0.0.1 (in memory)",
        "clients": options.clients,
        "requests": options.requests,
        "cells": cells.iter().map(|c| json!({
            "store": c.store, "replicas": c.replicas, "endpoint": c.endpoint,
            "per_second": c.per_second, "p50_ms": c.p50_ms, "p95_ms": c.p95_ms,
        })).collect::<Vec<_>>(),
        "object_store_over_local": ratios(&cells),
    });
    let path = write_record(&options.out, "replicas.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

/// A new bucket on the endpoint, with the options to reach it.
async fn s3_location(endpoint: &str) -> anyhow::Result<engine::index::lance::Location> {
    let bucket = format!("lore-bench-{}", uuid::Uuid::new_v4().simple());
    let created =
        reqwest::Client::new().put(format!("{}/{bucket}", endpoint.trim_end_matches('/'))).send().await?;
    anyhow::ensure!(created.status().is_success(), "creating bucket {bucket}: {}", created.status());
    let mut at = engine::index::lance::Location::new(format!("s3://{bucket}/lancedb"));
    at.options.insert("aws_endpoint".into(), endpoint.to_owned());
    at.options.insert("allow_http".into(), endpoint.starts_with("http://").to_string());
    if std::env::var_os("AWS_REGION").is_none() {
        at.options.insert("aws_region".into(), "us-east-1".into());
    }
    Ok(at)
}

async fn on_store(
    settings: &Settings,
    options: &ReplicasOptions,
    site: &str,
    store: &'static str,
    database: &str,
    vectors: &engine::index::lance::Location,
) -> anyhow::Result<Vec<Cell>> {
    let replica = || {
        let mut settings = settings.clone();
        settings.data_dir = tempfile_dir()?;
        settings.database.url = Some(engine::settings::Secret::new(database.to_owned()));
        settings.vectors.uri = Some(vectors.uri.clone());
        settings.vectors.storage_options = vectors.options.clone();
        settings.ingest.allow_private_addresses = true;
        anyhow::Ok(settings)
    };
    let a = Lore::open(replica()?).await?;
    crate::commands::models::ensure(&a, false).await?;
    index_site(&a, site, options.pages).await?;
    let key = answer_key(&a).await?;
    bind_generation(&a, &options.llm_endpoint, &options.llm_model).await?;
    let b = Lore::open(replica()?).await?;
    let serving = [Serving::start(&a).await?, Serving::start(&b).await?];
    let http = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
    let apis: Vec<Api> =
        serving.iter().map(|s| Api { http: http.clone(), base: s.base.clone(), key: key.clone() }).collect();

    // Each question asked of each replica until both serve it from the
    // cache: only grounded answers are cached, and SmolLM2 grounds a
    // question on one call and not on another, so a question whose model
    // call was refused on either replica is left out.
    println!("Asking {} questions on each replica (the model answers each once) …", QUESTIONS.len());
    let mut grounded = Vec::new();
    for question in QUESTIONS {
        let mut cached = true;
        for api in &apis {
            let (_, body) = api.ask(question).await?;
            if body["refused"].as_bool() != Some(false) {
                cached = false;
                break;
            }
        }
        if cached {
            for api in &apis {
                let (_, body) = api.ask(question).await?;
                cached &= body["cache"]["status"] == "hit";
            }
        }
        if cached {
            grounded.push(question);
        }
    }
    println!("{} of them grounded and cached on both.", grounded.len());
    anyhow::ensure!(!grounded.is_empty(), "the model grounded no answer: nothing to cache");
    let grounded = Arc::new(grounded);

    let mut cells = Vec::new();
    for replicas in [1, 2] {
        let apis: Arc<Vec<Api>> = Arc::new(apis[..replicas].to_vec());
        for query in QUERIES {
            for api in apis.iter() {
                api.retrieve(query).await?;
            }
        }
        let (per_second, spread) = concurrent(options.clients, options.requests, {
            let apis = apis.clone();
            move |i| {
                let apis = apis.clone();
                async move { apis[i % apis.len()].retrieve(QUERIES[i % QUERIES.len()]).await }
            }
        })
        .await?;
        cells.push(Cell {
            store,
            replicas,
            endpoint: "/retrieve",
            per_second,
            p50_ms: spread.p50,
            p95_ms: spread.p95,
        });
        let (per_second, spread) = concurrent(options.clients, options.requests, {
            let (apis, grounded) = (apis.clone(), grounded.clone());
            move |i| {
                let (apis, grounded) = (apis.clone(), grounded.clone());
                async move {
                    let (latency, body) =
                        apis[i % apis.len()].ask(grounded[(i / 2) % grounded.len()]).await?;
                    anyhow::ensure!(
                        body["cache"]["status"] == "hit",
                        "a primed question missed the cache: {body}"
                    );
                    Ok(latency)
                }
            }
        })
        .await?;
        cells.push(Cell {
            store,
            replicas,
            endpoint: "/answer (cached)",
            per_second,
            p50_ms: spread.p50,
            p95_ms: spread.p95,
        });
        println!("  {replicas} replica(s) measured");
    }
    let [first, second] = serving;
    first.stop().await;
    second.stop().await;
    Ok(cells)
}

fn print_table(cells: &[Cell], clients: usize) {
    println!("\n{clients} concurrent clients, PostgreSQL for records");
    println!(
        "{:<20} {:>8} {:<18} {:>9} {:>9} {:>9}",
        "vectors", "replicas", "endpoint", "req/s", "p50 ms", "p95 ms"
    );
    for c in cells {
        println!(
            "{:<20} {:>8} {:<18} {:>9.1} {:>9.1} {:>9.1}",
            c.store, c.replicas, c.endpoint, c.per_second, c.p50_ms, c.p95_ms
        );
    }
    println!("\nobject store ÷ local directory");
    for ratio in ratios(cells) {
        println!(
            "{:>8} replica(s) {:<18} throughput ×{:.2}   p95 ×{:.2}",
            ratio["replicas"],
            ratio["endpoint"].as_str().unwrap_or_default(),
            ratio["throughput"].as_f64().unwrap_or_default(),
            ratio["p95"].as_f64().unwrap_or_default()
        );
    }
}

/// Each object-store cell over its local-directory twin.
fn ratios(cells: &[Cell]) -> Vec<Value> {
    cells
        .iter()
        .filter(|c| c.store != "local directory")
        .filter_map(|s3| {
            let local = cells.iter().find(|l| {
                l.store == "local directory" && l.replicas == s3.replicas && l.endpoint == s3.endpoint
            })?;
            Some(json!({
                "replicas": s3.replicas,
                "endpoint": s3.endpoint,
                "throughput": s3.per_second / local.per_second,
                "p95": s3.p95_ms / local.p95_ms,
            }))
        })
        .collect()
}
