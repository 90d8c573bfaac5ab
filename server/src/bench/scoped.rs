//! `lore bench answer`'s scoped runs: `/retrieve` for callers who may read
//! all, half or a twentieth of the corpus, beside an admin's unscoped
//! retrieval in the same run, and the vector stage's recall against an
//! exact search of what each caller may read.
//!
//! The synthetic part of the corpus is split over [`SHELVES`] upload
//! sources; each shelf's audience names the roles that read it, and the
//! crawled site is given to the role that reads everything (admins read it
//! anyway), so each role's share is a share of the whole corpus.

use std::collections::HashSet;
use std::sync::Arc;

use engine::appdb::Principal;
use engine::audit::Actor;
use engine::index::{ChunkStore, Scope};
use engine::sources::{self, Reader};
use engine::Lore;
use futures::StreamExt;
use serde_json::{json, Value};

use super::answer::{concurrent, Api, Spread};
use super::{jitter, PER_DOCUMENT, RECALL_AT};

/// Upload sources the synthetic chunks are split over.
pub(super) const SHELVES: usize = 20;
/// Clients of the throughput measurement.
const CLIENTS: usize = 8;
/// Query vectors of the recall measurement.
const RECALL_QUERIES: usize = 100;
/// The goal: a scoped p95 within this factor of the unscoped one.
const P95_GOAL_RATIO: f64 = 1.2;

/// One caller of the scoped runs.
struct Caller {
    label: &'static str,
    /// The role of its user; `None` is a super user (no filter at all).
    role: Option<&'static str>,
    /// The shelves its role reads (the first ones).
    shelves: usize,
}

const CALLERS: [Caller; 4] = [
    Caller { label: "admin, unscoped", role: None, shelves: SHELVES },
    Caller { label: "role reading 100%", role: Some("reads_all"), shelves: SHELVES },
    Caller { label: "role reading 50%", role: Some("reads_half"), shelves: SHELVES / 2 },
    Caller { label: "role reading 5%", role: Some("reads_twentieth"), shelves: SHELVES / 20 },
];

/// The shelves (source ids, in order) and each caller's raw key.
pub(super) struct Audiences {
    pub(super) shelves: Vec<String>,
    keys: Vec<String>,
}

impl Audiences {
    /// The admin's key: the unscoped caller the rest of the benchmark uses.
    pub(super) fn admin_key(&self) -> &str {
        &self.keys[0]
    }
}

/// Makes the roles, a user and a key for each caller, and the shelves with
/// their audiences; gives the crawled source to the role that reads all.
pub(super) async fn prepare(lore: &Lore, crawled: &str) -> anyhow::Result<Audiences> {
    let admin = Principal::Admin { account_id: "bench".into() };
    let actor = Actor::System;
    let mut keys = Vec::new();
    for caller in &CALLERS {
        let (role, super_user) = match caller.role {
            Some(role) => (role, false),
            None => ("bench_admin", true),
        };
        let user = format!("{role}_user");
        for operation in [
            json!({"operation": "add_role", "role": role, "permission": {"super_user": super_user}}),
            json!({"operation": "add_user", "username": user, "password": "bench only", "role": role, "active": true}),
        ] {
            Box::pin(engine::operations::dispatch(lore, &admin, operation)).await?;
        }
        let new = engine::keys::NewKey {
            name: format!("bench {}", caller.label),
            kind: "secret".into(),
            scopes: vec!["answer".into(), "retrieve".into()],
            user: Some(user),
            ..engine::keys::NewKey::default()
        };
        keys.push(engine::keys::create(lore, &actor, new).await?.1);
    }
    let mut shelves = Vec::new();
    for shelf in 0..SHELVES {
        let readers: Vec<&str> =
            CALLERS.iter().filter(|c| shelf < c.shelves).filter_map(|c| c.role).collect();
        let new = sources::NewSource {
            name: format!("Shelf {shelf:02}"),
            kind: "upload".into(),
            audience: Some(readers.join(",")),
            ..sources::NewSource::default()
        };
        shelves.push(sources::create(lore, &actor, new).await?.id);
    }
    sources::set_audience(lore, &actor, crawled, "reads_all").await?;
    Ok(Audiences { shelves, keys })
}

/// The row ranges of `rows` synthetic chunks per shelf, cut at whole
/// documents so that no document spans two shelves.
pub(super) fn split(rows: usize) -> Vec<std::ops::Range<usize>> {
    let cut = |shelf: usize| {
        if shelf == SHELVES {
            rows
        } else {
            shelf * rows / SHELVES / PER_DOCUMENT * PER_DOCUMENT
        }
    };
    (0..SHELVES).map(|shelf| cut(shelf)..cut(shelf + 1)).collect()
}

/// A stored chunk, as the exact search reads it.
struct Stored {
    id: String,
    source_id: String,
    vector: Vec<f32>,
}

/// Measures every caller against `api` (the admin's client, whose key is
/// swapped per caller); the record's `scoped` part.
pub(super) async fn measure(
    lore: &Lore,
    api: &Api,
    audiences: &Audiences,
    queries: &[&str],
    requests: usize,
) -> anyhow::Result<Value> {
    let store = lore.chunks().await?;
    let mut stored = Vec::new();
    let mut batches = store.scan().await?;
    while let Some(batch) = batches.next().await {
        stored.extend(batch?.into_iter().map(|row| Stored {
            id: row.id,
            source_id: row.source_id,
            vector: row.vector,
        }));
    }
    anyhow::ensure!(!stored.is_empty(), "the corpus is empty");
    // Query vectors near the corpus's own (its chunks' vectors, jittered):
    // every query has close neighbours on every shelf.
    let probes: Vec<Vec<f32>> = (0..RECALL_QUERIES)
        .map(|i| jitter(&stored[(i * 7919) % stored.len()].vector, 1_000_000 + i))
        .collect();
    let all = sources::list(lore).await?;

    let mut rows = Vec::new();
    let mut unscoped_p95 = None;
    for (caller, key) in CALLERS.iter().zip(&audiences.keys) {
        let reader = match caller.role {
            None => Reader::Everything,
            Some(role) => Reader::of_role(&engine::appdb::users::role(&lore.db, role).await?),
        };
        let scope = sources::audience::visible_scope(&all, &reader);
        let visible: HashSet<&str> = scope.sources.iter().map(String::as_str).collect();
        let visible_chunks = stored.iter().filter(|c| visible.contains(c.source_id.as_str())).count();
        let api = Api { key: key.clone(), ..api.clone() };

        // One client, after a warm-up round; each result checked against
        // what the caller may read.
        let mut leaked = 0;
        let mut samples = Vec::new();
        for (i, query) in queries.iter().cycle().take(requests + queries.len()).enumerate() {
            let (ms, found) = api.post("/retrieve", &json!({ "query": query })).await?;
            leaked += found["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| !visible.contains(r["source_id"].as_str().unwrap_or_default()))
                .count();
            if i >= queries.len() {
                samples.push(ms);
            }
        }
        let one = Spread::of(samples);
        let total = (CLIENTS * 8).max(requests);
        let shared: Arc<Vec<String>> = Arc::new(queries.iter().map(|q| (*q).to_owned()).collect());
        let (per_second, busy) = concurrent(CLIENTS, total, {
            let api = api.clone();
            move |i| {
                let (api, shared) = (api.clone(), shared.clone());
                async move { api.retrieve(&shared[i % shared.len()]).await }
            }
        })
        .await?;

        let recall = recall(store.as_ref(), &stored, &visible, &scope, &probes).await?;
        let baseline = *unscoped_p95.get_or_insert(one.p95);
        let ratio = if baseline > 0.0 { one.p95 / baseline } else { 0.0 };
        rows.push(json!({
            "caller": caller.label,
            "visible_chunks": visible_chunks,
            "visible_share": visible_chunks as f64 / stored.len().max(1) as f64,
            "retrieve": one.json(None),
            "p95_to_unscoped": ratio,
            "goal_met": caller.role.is_none() || ratio <= P95_GOAL_RATIO,
            "throughput": {"clients": CLIENTS, "requests": total, "per_second": per_second,
                           "p50_ms": busy.p50, "p95_ms": busy.p95},
            "recall_at": RECALL_AT,
            "vector_recall": recall,
            "results_outside_scope": leaked,
        }));
    }
    print(&rows);
    Ok(json!({
        "shelves": SHELVES,
        "recall_queries": RECALL_QUERIES,
        "recall_query_vectors": "chunk vectors of the corpus, jittered",
        "goal": format!("scoped p95 within {P95_GOAL_RATIO}x of the unscoped; vector recall 1.0"),
        "callers": rows,
    }))
}

/// Mean share of the exact nearest [`RECALL_AT`] visible chunks that the
/// store's scoped vector search (the one retrieval runs) returns; none when
/// the caller sees no chunk.
async fn recall(
    store: &dyn ChunkStore,
    stored: &[Stored],
    visible: &HashSet<&str>,
    scope: &Scope,
    probes: &[Vec<f32>],
) -> anyhow::Result<Option<f64>> {
    let candidates: Vec<&Stored> = stored.iter().filter(|c| visible.contains(c.source_id.as_str())).collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    let mut sum = 0.0;
    for probe in probes {
        let mut scored: Vec<(f32, &str)> =
            candidates.iter().map(|c| (dot(probe, &c.vector), c.id.as_str())).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let exact: HashSet<&str> = scored.iter().take(RECALL_AT).map(|(_, id)| *id).collect();
        let found: HashSet<String> =
            store.vector_search(probe, scope, RECALL_AT).await?.into_iter().map(|hit| hit.chunk.id).collect();
        let kept = exact.iter().filter(|id| found.contains(**id)).count();
        sum += kept as f64 / exact.len().max(1) as f64;
    }
    Ok(Some(sum / probes.len().max(1) as f64))
}

/// Cosine similarity of unit vectors.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn print(rows: &[Value]) {
    println!("\nscoped /retrieve (who may read what), one client and {CLIENTS} clients");
    println!(
        "{:<20} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>8} {:>7}",
        "caller", "visible", "share", "p50 ms", "p95 ms", "×p95", "req/s @8", "recall", "leaked"
    );
    for row in rows {
        let f = |path: &[&str]| path.iter().fold(row, |v, k| &v[*k]).as_f64().unwrap_or_default();
        println!(
            "{:<20} {:>8} {:>7.1}% {:>9.1} {:>9.1} {:>8.2} {:>9.1} {:>8} {:>7}",
            row["caller"].as_str().unwrap_or_default(),
            row["visible_chunks"].as_u64().unwrap_or_default(),
            f(&["visible_share"]) * 100.0,
            f(&["retrieve", "p50_ms"]),
            f(&["retrieve", "p95_ms"]),
            f(&["p95_to_unscoped"]),
            f(&["throughput", "per_second"]),
            row["vector_recall"].as_f64().map_or("n/a".to_owned(), |r| format!("{r:.3}")),
            row["results_outside_scope"].as_u64().unwrap_or_default(),
        );
    }
}
