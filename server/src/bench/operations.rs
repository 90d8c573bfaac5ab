//! `lore bench operations`: the operations API and REST over HTTP on
//! loopback, on SQLite and on PostgreSQL, beside HarperDB 4.7 measured in
//! the same run with the same calls (`../shared/peers/harperdb.sh start`
//! runs it on 127.0.0.1:9925).
//!
//! Each target gets the same workload, one client, every request awaited:
//! - insert: `--records` dogs in batches of 500 (records/s);
//! - `search_by_id` of one random id, and `search_by_value` of one of 100
//!   breeds (an indexed attribute, about `records / 100` rows), p50/p95;
//! - `describe_all` with 10 databases × 20 tables, p50;
//! - REST `GET` of one record by id, p50/p95 (Lore: `/data/dog/<id>`;
//!   HarperDB: `/<table>/<id>` on its REST port, when it serves the table).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use engine::audit::Actor;
use engine::{Lore, Settings};
use serde_json::{json, Value};

use super::{build_profile, millis, percentile, tempfile_dir, write_record, Serving};

pub struct OperationsOptions {
    pub records: usize,
    pub requests: usize,
    /// A PostgreSQL server URL: a fresh database is made on it (and dropped).
    pub postgres_url: Option<String>,
    /// HarperDB's operations API, its REST port and its admin credentials.
    pub harperdb_url: Option<String>,
    pub harperdb_rest_url: Option<String>,
    pub harperdb_user: String,
    pub harperdb_password: String,
    pub out: Option<PathBuf>,
}

const BATCH: usize = 500;
const BREEDS: usize = 100;

/// How a target is reached.
struct Target {
    name: String,
    http: reqwest::Client,
    operation_url: String,
    auth: Auth,
    /// The REST URL of a record, given its id.
    rest: Option<String>,
}

enum Auth {
    Key(String),
    Basic(String, String),
}

impl Target {
    fn authed(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            Auth::Key(key) => request.header("x-api-key", key),
            Auth::Basic(user, password) => request.basic_auth(user, Some(password)),
        }
    }

    /// One operation; fails on anything but 200.
    async fn call(&self, body: Value) -> anyhow::Result<Value> {
        let response = self.authed(self.http.post(&self.operation_url).json(&body)).send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("{}: {} answered {status}: {text}", self.name, body["operation"]);
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Milliseconds of one operation.
    async fn timed(&self, body: Value) -> anyhow::Result<f64> {
        let started = Instant::now();
        self.call(body).await?;
        Ok(millis(started.elapsed()))
    }
}

/// A small deterministic generator (SplitMix64): the same ids and breeds
/// are asked of every target.
struct Mix(u64);

impl Mix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }
}

fn dog(i: usize) -> Value {
    json!({"id": i, "name": format!("dog {i}"), "breed": format!("breed {}", i % BREEDS), "age": (i % 15) as i64,
           "owner": format!("owner {}", i % 997)})
}

fn spread(mut samples: Vec<f64>) -> Value {
    samples.sort_by(f64::total_cmp);
    json!({"p50_ms": percentile(&samples, 50.0), "p95_ms": percentile(&samples, 95.0), "n": samples.len()})
}

/// The workload on one target; its figures.
async fn measure(target: &Target, options: &OperationsOptions, declared: bool) -> anyhow::Result<Value> {
    println!("{}: inserting {} records …", target.name, options.records);
    if !declared {
        target.call(json!({"operation": "create_database", "database": "bench"})).await?;
        target
            .call(json!({"operation": "create_table", "database": "bench", "table": "dog", "primary_key": "id"}))
            .await?;
    }
    let started = Instant::now();
    for batch in (0..options.records).collect::<Vec<_>>().chunks(BATCH) {
        let records: Vec<Value> = batch.iter().map(|i| dog(*i)).collect();
        target
            .call(json!({"operation": "insert", "database": "bench", "table": "dog", "records": records}))
            .await?;
    }
    let insert_per_s = options.records as f64 / started.elapsed().as_secs_f64();

    let mut rng = Mix(7);
    let mut by_id = Vec::with_capacity(options.requests);
    let mut by_value = Vec::with_capacity(options.requests);
    let mut rest = Vec::with_capacity(options.requests);
    for _ in 0..options.requests {
        let id = rng.below(options.records);
        by_id.push(
            target
                .timed(json!({"operation": "search_by_id", "database": "bench", "table": "dog", "ids": [id],
                              "get_attributes": ["*"]}))
                .await?,
        );
        let breed = format!("breed {}", rng.below(BREEDS));
        by_value.push(
            target
                .timed(json!({"operation": "search_by_value", "database": "bench", "table": "dog",
                              "search_attribute": "breed", "search_value": breed, "get_attributes": ["id", "name"]}))
                .await?,
        );
        if let Some(base) = &target.rest {
            let started = Instant::now();
            let response = target.authed(target.http.get(format!("{base}{id}"))).send().await?;
            let status = response.status();
            response.bytes().await?;
            if !status.is_success() {
                bail!("{}: REST GET answered {status}", target.name);
            }
            rest.push(millis(started.elapsed()));
        }
    }

    println!("{}: describe_all over 10 databases × 20 tables …", target.name);
    for d in 0..10 {
        let database = format!("bench_d{d}");
        target.call(json!({"operation": "create_database", "database": database})).await?;
        for t in 0..20 {
            let table = format!("t{t}");
            target
                .call(json!({"operation": "create_table", "database": database, "table": table, "primary_key": "id"}))
                .await?;
            target
                .call(json!({"operation": "insert", "database": database, "table": table,
                             "records": [{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]}))
                .await?;
        }
    }
    let mut describe = Vec::new();
    for _ in 0..options.requests.clamp(1, 50) {
        describe.push(target.timed(json!({"operation": "describe_all"})).await?);
    }
    Ok(json!({
        "insert_records_per_s": insert_per_s,
        "search_by_id": spread(by_id),
        "search_by_value": spread(by_value),
        "describe_all": spread(describe),
        "rest_get": if rest.is_empty() { Value::Null } else { spread(rest) },
    }))
}

const SCHEMA: &str = r#"
type Dog @table(database: "bench", table: "dog") @export(name: "dog") {
  id: Long @primaryKey
  name: String
  breed: String @indexed
  age: Int
  owner: String
}
"#;

/// Lore on `settings`, served on loopback with a super user's key; the
/// workload; the server stopped.
async fn lore_target(name: &str, settings: Settings, options: &OperationsOptions) -> anyhow::Result<Value> {
    let lore = Lore::open(settings).await.context("opening Lore")?;
    engine::appdb::schema::apply(&lore, &Actor::System, SCHEMA).await?;
    engine::appdb::users::add_role(&lore, &Actor::System, "bench", &json!({"super_user": true})).await?;
    engine::appdb::users::add_user(&lore, &Actor::System, "bench", "bench", true).await?;
    let (_, key) = engine::keys::create(
        &lore,
        &Actor::System,
        engine::keys::NewKey {
            name: "bench".into(),
            kind: "secret".into(),
            scopes: vec!["operations".into()],
            user: Some("bench".into()),
            ..engine::keys::NewKey::default()
        },
    )
    .await?;
    let serving = Serving::start(&lore).await?;
    let base = serving.base.clone();
    let target = Target {
        name: name.to_owned(),
        http: reqwest::Client::new(),
        operation_url: format!("{base}/operation"),
        auth: Auth::Key(key),
        rest: Some(format!("{base}/data/dog/")),
    };
    let measured = measure(&target, options, true).await;
    serving.stop().await;
    measured
}

/// A fresh database on the PostgreSQL server at `url`: its URL and a
/// connection to drop it with.
pub(super) async fn fresh_postgres(
    url: &str,
) -> anyhow::Result<(String, String, sea_orm::DatabaseConnection)> {
    use sea_orm::ConnectionTrait;
    let admin = sea_orm::Database::connect(url).await.context("connecting to --postgres-url")?;
    let name = format!("lore_bench_{}", uuid::Uuid::new_v4().simple());
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await?;
    let mut fresh = url::Url::parse(url).context("--postgres-url is not a URL")?;
    fresh.set_path(&name);
    Ok((fresh.to_string(), name, admin))
}

pub async fn operations(settings: Settings, options: OperationsOptions) -> anyhow::Result<()> {
    let mut results = serde_json::Map::new();

    let data = tempfile_dir()?;
    let sqlite = Settings { data_dir: data.clone(), ..settings.clone() };
    let measured = lore_target("lore (SQLite)", sqlite, &options).await;
    let _ = std::fs::remove_dir_all(&data);
    results.insert("lore_sqlite".into(), measured?);

    if let Some(url) = &options.postgres_url {
        let (fresh, name, admin) = fresh_postgres(url).await?;
        let data = tempfile_dir()?;
        let mut postgres = Settings { data_dir: data.clone(), ..settings.clone() };
        postgres.database.url = Some(engine::settings::Secret::new(fresh));
        let measured = lore_target("lore (PostgreSQL)", postgres, &options).await;
        let _ = std::fs::remove_dir_all(&data);
        use sea_orm::ConnectionTrait;
        let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        results.insert("lore_postgres".into(), measured?);
    }

    if let Some(url) = &options.harperdb_url {
        let http = reqwest::Client::new();
        let target = Target {
            name: "HarperDB".into(),
            http,
            operation_url: url.clone(),
            auth: Auth::Basic(options.harperdb_user.clone(), options.harperdb_password.clone()),
            rest: None,
        };
        // A peer left with an earlier run's tables starts clean.
        for database in std::iter::once("bench".to_owned()).chain((0..10).map(|d| format!("bench_d{d}"))) {
            let _ = target.call(json!({"operation": "drop_database", "database": database})).await;
        }
        let mut target = target;
        target.rest =
            options.harperdb_rest_url.as_ref().map(|rest| format!("{}/dog/", rest.trim_end_matches('/')));
        let measured = match measure(&target, &options, false).await {
            // HarperDB serves REST only for tables a component exports: a
            // table made by an operation may answer 404, so try without.
            Err(err) if target.rest.is_some() && err.to_string().contains("REST GET") => {
                println!(
                    "HarperDB: REST GET is not served for an operation-made table; measuring without it"
                );
                for database in
                    std::iter::once("bench".to_owned()).chain((0..10).map(|d| format!("bench_d{d}")))
                {
                    let _ = target.call(json!({"operation": "drop_database", "database": database})).await;
                }
                target.rest = None;
                measure(&target, &options, false).await
            }
            other => other,
        };
        results.insert("harperdb".into(), measured?);
    }

    print_table(&results);
    let record = json!({
        "benchmark": "operations",
        "records": options.records,
        "requests": options.requests,
        "batch": BATCH,
        "build": build_profile(),
        "results": results,
    });
    let path = write_record(&options.out, "operations.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}

fn print_table(results: &serde_json::Map<String, Value>) {
    println!();
    println!(
        "{:<16} {:>12} {:>16} {:>20} {:>14} {:>16}",
        "target", "insert rec/s", "by_id p50/p95", "by_value p50/p95", "describe p50", "REST GET p50/p95"
    );
    let pair = |v: &Value| match (v["p50_ms"].as_f64(), v["p95_ms"].as_f64()) {
        (Some(p50), Some(p95)) => format!("{p50:.2}/{p95:.2} ms"),
        _ => "-".to_owned(),
    };
    for (name, figures) in results {
        println!(
            "{:<16} {:>12.0} {:>16} {:>20} {:>11.2} ms {:>16}",
            name,
            figures["insert_records_per_s"].as_f64().unwrap_or_default(),
            pair(&figures["search_by_id"]),
            pair(&figures["search_by_value"]),
            figures["describe_all"]["p50_ms"].as_f64().unwrap_or_default(),
            pair(&figures["rest_get"]),
        );
    }
}
