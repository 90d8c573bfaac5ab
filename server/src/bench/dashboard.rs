//! `lore bench dashboard`: the Dashboard's aggregate time over the rollups of
//! many answer runs. The runs are generated (spread over 30 days, five
//! surfaces, a few keys, a realistic mix of hits, misses and refusals, and
//! questions with a long tail: 50,000 distinct ones, Zipf-distributed, so a
//! day holds thousands) and only their rollups are stored, exactly as the
//! live path would have summed them. The closed days are folded as `lore
//! serve` folds them (`engine::metrics::close_days`), and the fold's effect on
//! the 30-day top questions is measured against the exact list; then
//! `engine::metrics::dashboard` is timed for the ranges the Dashboard offers.

use std::path::PathBuf;
use std::time::Instant;

use chrono::{Duration, Utc};
use engine::metrics::{self, Contribution, Range, RecordedStage, RunFacts};
use engine::{Lore, Settings};
use serde_json::json;

use super::{build_profile, millis, percentile, tempfile_dir, write_record};

const SURFACES: [&str; 5] = ["api", "widget", "playground", "mcp", "cli"];
/// Who asked, as far as reading goes: each run adds its questions to one
/// audience's lists too.
const AUDIENCES: [&str; 3] = ["admin", "everyone", "role:support"];
const GOAL_P95_MS: f64 = 50.0;
/// Distinct questions; the `r`-th most asked is asked about 1/r as often.
const QUESTIONS: f64 = 50_000.0;

/// The rank of the `i`-th run's question: log-uniform over 1..=QUESTIONS,
/// which is Zipf's law with exponent 1.
fn question_rank(i: u64) -> u64 {
    let u = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    (u * QUESTIONS.ln()).exp().floor() as u64
}

/// One recorded stage of a generated trace.
fn stage(stage: &str, decision: &str, reason: &str) -> RecordedStage {
    RecordedStage { stage: stage.into(), decision: decision.into(), reason: reason.into(), cost_usd: None }
}

/// The `i`-th generated run (deterministic), as the rollups see it.
fn run(i: u64, runs: u64, now: chrono::DateTime<Utc>) -> RunFacts {
    let mix = i.wrapping_mul(2_654_435_761) % 1000;
    let (cache_hit, refused) = match mix {
        0..=399 => (true, false),
        400..=899 => (false, false),
        _ => (false, true),
    };
    let seconds_back = (i * 30 * 86_400) / runs.max(1);
    let stages = if cache_hit {
        vec![stage("exact_cache", "hit", "the same question")]
    } else if refused {
        vec![
            stage("exact_cache", "miss", "no cached answer"),
            stage("retrieval", "nothing", "none at or above the cutoff"),
        ]
    } else {
        vec![
            stage("exact_cache", "miss", "no cached answer"),
            stage("generation", "answered", "the model wrote 80 tokens"),
            stage("grounding", "grounded", "supported"),
        ]
    };
    RunFacts {
        created_at: now - Duration::seconds(i64::try_from(seconds_back).unwrap_or(0)),
        surface: SURFACES[(mix % 5) as usize].to_owned(),
        key_id: (!mix.is_multiple_of(7)).then(|| format!("key-{}", mix % 12)),
        profile_version: 1,
        question: format!("generated question {}", question_rank(i)),
        cache_hit,
        refused,
        stages,
        estimated_cost_usd: if cache_hit { 0.0 } else { 0.0004 },
        estimated_savings_usd: if cache_hit { 0.0004 } else { 0.0 },
        latency_ms: if cache_hit { 4.0 + (mix % 10) as f64 } else { 400.0 + mix as f64 * 3.0 },
        audience: Some(AUDIENCES[(mix % 3) as usize].to_owned()),
    }
}

pub async fn dashboard(mut settings: Settings, runs: u64, out: Option<PathBuf>) -> anyhow::Result<()> {
    let data = tempfile_dir()?;
    settings.data_dir = data.clone();
    settings.database.url = None;
    let lore = Lore::open(settings).await?;
    let now = Utc::now();

    println!("Summing the rollups of {runs} generated answer runs …");
    let started = Instant::now();
    let mut contribution = Contribution::default();
    for i in 0..runs {
        contribution.add(&run(i, runs, now));
    }
    let rows = contribution.insert_into(&lore.db).await?;
    println!("{rows} rollup rows written in {:.1} s.", started.elapsed().as_secs_f64());

    let month = Range::last_hours(now, 24 * 30);
    let exact = metrics::dashboard(&lore, month).await?;
    let started = Instant::now();
    let closed = metrics::close_days(&lore, now).await?;
    let fold_seconds = started.elapsed().as_secs_f64();
    let folded = metrics::dashboard(&lore, month).await?;
    let same_top = folded.top_queries.iter().zip(&exact.top_queries).filter(|(a, b)| a == b).count();
    println!(
        "Folded {} question rows of {} closed days into tail rows in {fold_seconds:.1} s; \
         the 30-day top {} questions match the exact list in {same_top} places (question and count).",
        closed.folded,
        closed.days,
        exact.top_queries.len()
    );
    anyhow::ensure!(folded.totals == exact.totals, "folding changed the totals");

    let mut results = Vec::new();
    println!(
        "\n{:<16} {:>8} {:>9} {:>9}   goal p95 ≤ {GOAL_P95_MS:.0} ms",
        "range", "calls", "p50 ms", "p95 ms"
    );
    for (label, hours) in [("24 hours", 24), ("7 days", 24 * 7), ("30 days", 24 * 30)] {
        let range = Range::last_hours(now, hours);
        metrics::dashboard(&lore, range).await?; // warm-up
        let mut samples = Vec::new();
        for _ in 0..40 {
            let t = Instant::now();
            let aggregates = metrics::dashboard(&lore, range).await?;
            samples.push(millis(t.elapsed()));
            anyhow::ensure!(aggregates.totals.queries > 0, "the generated rollups are missing");
        }
        samples.sort_by(f64::total_cmp);
        let (p50, p95) = (percentile(&samples, 50.0), percentile(&samples, 95.0));
        let verdict = if p95 <= GOAL_P95_MS { "met" } else { "NOT met" };
        println!("{label:<16} {:>8} {p50:>9.1} {p95:>9.1}   {verdict}", samples.len());
        results.push(json!({"range": label, "calls": samples.len(), "p50_ms": p50, "p95_ms": p95,
            "goal_p95_ms": GOAL_P95_MS, "goal_met": p95 <= GOAL_P95_MS}));
    }
    drop(lore);
    let _ = std::fs::remove_dir_all(&data);
    let record = json!({
        "benchmark": "dashboard",
        "at": Utc::now().to_rfc3339(),
        "build": build_profile(),
        "database": "SQLite (the embedded default)",
        "runs": runs,
        "rollup_rows": rows,
        "folded_rows": closed.folded,
        "fold_seconds": fold_seconds,
        "top_queries_matching_exact": same_top,
        "top_queries_listed": exact.top_queries.len(),
        "results": results,
    });
    let path = write_record(&out, "dashboard.json", &record)?;
    println!("Record written to {}", path.display());
    Ok(())
}
