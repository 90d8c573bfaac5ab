//! The Dashboard's rollups on both databases: runs of known surfaces, keys
//! and outcomes give exactly the expected counts, hit rate, p95, spend,
//! savings, lists and funnel; a rebuild from the runs gives the same; and the
//! aggregates are read from the rollup tables alone (they still come out
//! right after the runs table is dropped). Runs recorded behind the request
//! are all written, in batches, before any read. Closed days keep their most asked
//! questions and fold the long tail into one row, without changing a total.

use crate::support;

use chrono::{DateTime, TimeZone, Utc};
use engine::answer::runs::{self, Gap};
use engine::audit::Actor;
use engine::metrics::{self, Granularity, Range};
use engine::Lore;
use entity::answer_run;
use sea_orm::{ConnectionTrait, Database};
use serde_json::json;

fn at(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, minute, 0).unwrap()
}

struct Run {
    at: DateTime<Utc>,
    surface: &'static str,
    key: Option<String>,
    question: &'static str,
    /// `miss` (answered), `exact`/`semantic` (hit), `nothing` (refused, nothing
    /// retrieved) or `ungrounded` (refused; escalation disabled).
    outcome: &'static str,
    cost: f64,
    latency_ms: f64,
}

/// The stages of a run of `outcome` whose generation cost `cost`.
fn stages(outcome: &str, cost: f64) -> serde_json::Value {
    let stage = |stage: &str, decision: &str, reason: &str| json!({"stage": stage, "decision": decision, "reason": reason, "duration_ms": 1.0});
    let generation = |reason: &str| json!({"stage": "generation", "decision": "answered", "reason": reason, "duration_ms": 1.0, "cost_usd": cost});
    let mut list = vec![
        stage("normalise", "ok", "12 characters"),
        stage("readiness", "answerable", "profile version 1 serves"),
    ];
    match outcome {
        "exact" => list.extend([
            stage("exact_cache", "hit", "the same question"),
            stage("answer", "answered", "served from the exact cache"),
        ]),
        "semantic" => list.extend([
            stage("exact_cache", "miss", "no cached answer"),
            stage("semantic_cache", "hit", "a cached question is 0.950 similar"),
            stage("answer", "answered", "served from the semantic cache"),
        ]),
        "nothing" => list.extend([
            stage("exact_cache", "miss", "no cached answer"),
            stage("semantic_cache", "miss", "no cached question"),
            stage("retrieval", "nothing", "40 candidates, none at or above the cutoff"),
            stage("refusal", "refused", "no model was called"),
        ]),
        "ungrounded" => list.extend([
            stage("exact_cache", "miss", "no cached answer"),
            stage("semantic_cache", "miss", "no cached question"),
            stage("retrieval", "passages", "3 of 40 candidates passed the cutoff 0.35"),
            generation("smollm2 wrote 80 tokens"),
            stage("grounding", "ungrounded", "no statement is supported"),
            stage("escalation", "disabled", "the escalation target big-model is disabled"),
            stage("answer", "refused", "no grounded answer"),
        ]),
        _ => list.extend([
            stage("exact_cache", "miss", "no cached answer"),
            stage("semantic_cache", "miss", "no cached question"),
            stage("retrieval", "passages", "4 of 40 candidates passed the cutoff 0.35"),
            generation("smollm2 wrote 60 tokens"),
            stage("grounding", "grounded", "2 statements supported"),
            stage("answer", "answered", "1 citations"),
        ]),
    }
    json!(list)
}

/// Records `run` as the answer path does: queued for the recorder, which
/// writes behind (the dashboard's first read waits for it), asked at the
/// terminal. Returns its trace id.
async fn record(lore: &Lore, run: &Run) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let hit = matches!(run.outcome, "exact" | "semantic");
    let refused = matches!(run.outcome, "nothing" | "ungrounded");
    let gap = refused.then(|| Gap { key: run.question.to_owned(), asked: format!("{}?", run.question) });
    lore.recorder()
        .run(
            answer_run::Model {
                id: id.clone(),
                created_at: run.at,
                surface: run.surface.to_owned(),
                key_id: run.key.clone(),
                profile_version: 1,
                question: run.question.to_owned(),
                cache_status: if hit { "hit" } else { "miss" }.to_owned(),
                refused,
                grounded: !refused,
                escalated: false,
                model: None,
                stages: stages(run.outcome, run.cost),
                input_tokens: 0,
                output_tokens: 0,
                estimated_cost_usd: if hit { 0.0 } else { run.cost },
                estimated_savings_usd: if hit { run.cost } else { 0.0 },
                latency_ms: run.latency_ms,
                audience: Some(audience_of(run.surface).to_owned()),
                asked_by: Some("cli".into()),
                reply: Some(
                    json!({"question": run.question, "answer": "", "refused": refused, "citations": []}),
                ),
            },
            gap,
        )
        .await
        .unwrap();
    id
}

/// Who asks on each surface of these runs, as far as reading goes: the
/// backend's key acts as a `support` user, the widget's visitors are
/// anyone, the Playground is an admin's.
fn audience_of(surface: &str) -> &'static str {
    match surface {
        "api" => "role:support",
        "widget" => "everyone",
        _ => "admin",
    }
}

fn listed(list: &[metrics::QueryCount]) -> Vec<(&str, i64)> {
    list.iter().map(|q| (q.query.as_str(), q.count)).collect()
}

/// A secret key that may ask for answers.
async fn answer_key(lore: &Lore, name: &str) -> engine::keys::Key {
    let (key, _) = engine::keys::create(
        lore,
        &Actor::System,
        engine::keys::NewKey {
            name: name.into(),
            kind: "secret".into(),
            scopes: vec!["answer".into()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    key
}

async fn exercise(lore: &Lore) {
    let backend = answer_key(lore, "backend").await;
    let k1 = Some(backend.id.clone());
    let k2 = Some("widget-key-id".to_owned());
    let backup = "how do i back up the database";
    let mut runs = vec![
        Run {
            at: at(20, 10, 5),
            surface: "api",
            key: k1.clone(),
            question: backup,
            outcome: "miss",
            cost: 0.002,
            latency_ms: 1200.0,
        },
        Run {
            at: at(20, 10, 6),
            surface: "api",
            key: k1.clone(),
            question: backup,
            outcome: "exact",
            cost: 0.002,
            latency_ms: 8.0,
        },
        Run {
            at: at(20, 10, 7),
            surface: "playground",
            key: None,
            question: backup,
            outcome: "semantic",
            cost: 0.002,
            latency_ms: 9.0,
        },
        Run {
            at: at(20, 11, 0),
            surface: "widget",
            key: k2.clone(),
            question: "pricing for teams",
            outcome: "nothing",
            cost: 0.0,
            latency_ms: 30.0,
        },
        Run {
            at: at(20, 11, 30),
            surface: "api",
            key: k1.clone(),
            question: "rotate keys",
            outcome: "ungrounded",
            cost: 0.001,
            latency_ms: 900.0,
        },
    ];
    // Sixteen more answered API questions spread over hour 13, 20 ms to 320 ms.
    for i in 1..=16u32 {
        runs.push(Run {
            at: at(20, 13, i),
            surface: "api",
            key: k1.clone(),
            question: "what is lore",
            outcome: "miss",
            cost: 0.0005,
            latency_ms: f64::from(i) * 20.0,
        });
    }
    // Outside the range: the next day.
    runs.push(Run {
        at: at(21, 9, 0),
        surface: "api",
        key: k1.clone(),
        question: "late question",
        outcome: "nothing",
        cost: 0.0,
        latency_ms: 5.0,
    });
    let mut traces = Vec::new();
    for run in &runs {
        traces.push(record(lore, run).await);
    }
    // Ratings: the first answer (hour 10) helpful, the widget's refusal
    // (hour 11) unhelpful, the first of hour 13 unhelpful then helpful.
    use engine::answer::feedback::{self, Asked, Rating};
    for (run, helpful) in [(0, true), (3, false), (5, false), (5, true)] {
        let rating = Rating { trace_id: traces[run].clone(), helpful, comment: None };
        feedback::rate(lore, &Asked::Terminal, rating).await.unwrap();
    }

    let day = Range { from: at(20, 0, 0), to: at(21, 0, 0) };
    let live = metrics::dashboard(lore, day).await.unwrap();
    let in_range: Vec<&Run> = runs.iter().filter(|r| r.at < day.to).collect();

    // Totals.
    assert_eq!(live.granularity, Granularity::Hour);
    assert_eq!(live.totals.queries, 21);
    assert_eq!(live.totals.cache_hits, 2);
    assert!((live.totals.hit_rate - 2.0 / 21.0).abs() < 1e-12);
    assert_eq!(live.totals.refusals, 2);
    let spend: f64 = 0.002 + 0.001 + 16.0 * 0.0005;
    assert!((live.totals.spend_usd - spend).abs() < 1e-12, "{}", live.totals.spend_usd);
    assert!((live.totals.savings_usd - 0.004).abs() < 1e-12, "{}", live.totals.savings_usd);
    // p95: the 20th of 21 sorted latencies, read within the slot's 10%.
    let mut latencies: Vec<f64> = in_range.iter().map(|r| r.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let exact = latencies[19];
    assert_eq!(exact, 900.0);
    assert!(live.totals.p95_ms >= exact && live.totals.p95_ms <= exact * 1.1, "p95 {}", live.totals.p95_ms);

    // The series: 24 hourly points, empty hours included.
    assert_eq!(live.series.len(), 24);
    let queries_at = |hour: usize| live.series[hour].totals.queries;
    assert_eq!(
        (queries_at(9), queries_at(10), queries_at(11), queries_at(12), queries_at(13)),
        (0, 3, 2, 0, 16)
    );
    assert_eq!(live.series[13].totals.p95_ms, metrics::slot_upper_ms(metrics::latency_slot(320.0)));
    assert_eq!(live.series[10].totals.cache_hits, 2);
    let rated_at = |hour: usize| (live.series[hour].totals.helpful, live.series[hour].totals.unhelpful);
    assert_eq!((rated_at(10), rated_at(11), rated_at(13)), ((1, 0), (0, 1), (1, 0)));
    assert_eq!(
        (live.totals.helpful, live.totals.unhelpful, live.totals.helpful_rate),
        (2, 1, Some(2.0 / 3.0))
    );
    assert_eq!(
        live.versions.iter().map(|v| (v.version, v.queries, v.helpful, v.unhelpful)).collect::<Vec<_>>(),
        [(1, 21, 2, 1)]
    );

    // Per surface.
    let surface = |name: &str| live.surfaces.iter().find(|s| s.surface == name).unwrap().totals.clone();
    assert_eq!(
        (surface("api").queries, surface("playground").queries, surface("widget").queries),
        (19, 1, 1)
    );
    assert_eq!(surface("widget").refusals, 1);

    // Lists.
    assert_eq!(live.top_queries[0].query, "what is lore");
    assert_eq!(live.top_queries[0].count, 16);
    assert_eq!((live.top_queries[1].query.as_str(), live.top_queries[1].count), (backup, 3));
    let mut gaps: Vec<(&str, i64)> = live.content_gaps.iter().map(|g| (g.query.as_str(), g.count)).collect();
    gaps.sort();
    assert_eq!(gaps, vec![("pricing for teams", 1), ("rotate keys", 1)]);
    // The content-gap list (all time) counts the late question too.
    let mut counted: Vec<(String, i64)> =
        runs::gaps(lore, 10).await.unwrap().into_iter().map(|g| (g.question, g.count)).collect();
    counted.sort();
    let expected = [("late question", 1), ("pricing for teams", 1), ("rotate keys", 1)];
    assert_eq!(counted, expected.map(|(q, n)| (q.to_owned(), n)));
    let key = |name: &str| live.keys.iter().find(|k| k.name == name).unwrap().clone();
    assert_eq!(key("backend").queries, 19);
    assert_eq!((key("backend").helpful, key("backend").unhelpful), (2, 0));
    assert_eq!((key("widget-key-id").helpful, key("widget-key-id").unhelpful), (0, 1));
    assert_eq!(key("backend").key_id.as_deref(), Some(backend.id.as_str()));
    assert!((key("backend").spend_usd - spend).abs() < 1e-12);
    assert_eq!(key("widget-key-id").queries, 1, "a key that no longer exists shows by id");
    assert_eq!((key(metrics::NO_ACCESS_KEY).queries, key(metrics::NO_ACCESS_KEY).key_id), (1, None));

    // Per audience: the lists of those who read alike; the totals stay
    // every caller's.
    assert_eq!(live.audience, None);
    assert_eq!(live.audiences, ["admin", "everyone", "role:support"]);
    let everything = engine::sources::Reader::Everything;
    let support = metrics::analytics(lore, &everything, day, Some("role:support")).await.unwrap();
    assert_eq!(support.audience.as_deref(), Some("role:support"));
    assert_eq!(listed(&support.top_queries), [("what is lore", 16), (backup, 2), ("rotate keys", 1)]);
    assert_eq!(listed(&support.content_gaps), [("rotate keys", 1)]);
    assert_eq!(support.totals, live.totals);
    let widget = metrics::analytics(lore, &everything, day, Some("everyone")).await.unwrap();
    assert_eq!(listed(&widget.top_queries), [("pricing for teams", 1)]);
    assert_eq!(listed(&widget.content_gaps), [("pricing for teams", 1)]);
    // A reader of less than everything gets its own audience's lists,
    // whatever it names, and no keys.
    let public = engine::sources::Reader::Public;
    let asked = metrics::analytics(lore, &public, day, Some("role:support")).await.unwrap();
    assert_eq!(asked.audience.as_deref(), Some("everyone"));
    assert_eq!(asked.audiences, ["everyone"]);
    assert_eq!(listed(&asked.top_queries), [("pricing for teams", 1)]);
    assert!(asked.keys.is_empty());
    assert!(asked.funnel.iter().all(|f| f.reason.is_empty()), "reasons quote answers and pins");
    assert_eq!(
        asked.funnel.iter().map(|f| f.count).sum::<i64>(),
        live.funnel.iter().map(|f| f.count).sum::<i64>()
    );

    // The funnel: every (stage, decision) with its count, in pipeline order.
    let funnel = |stage: &str, decision: &str| {
        live.funnel.iter().find(|f| f.stage == stage && f.decision == decision).map(|f| f.count).unwrap_or(0)
    };
    assert_eq!(funnel("exact_cache", "hit"), 1);
    assert_eq!(funnel("exact_cache", "miss"), 20);
    assert_eq!(funnel("semantic_cache", "hit"), 1);
    assert_eq!(funnel("retrieval", "nothing"), 1);
    assert_eq!(funnel("generation", "answered"), 18);
    assert_eq!(funnel("grounding", "ungrounded"), 1);
    assert_eq!(funnel("escalation", "disabled"), 1);
    assert_eq!(funnel("answer", "refused"), 1);
    // The cost funnel carries what each stage's model calls cost: all of
    // the day's spend was first-tier generation.
    let generation = live.funnel.iter().find(|f| f.stage == "generation").unwrap();
    assert!((generation.spend_usd - spend).abs() < 1e-12, "{}", generation.spend_usd);
    assert!(live.funnel.iter().filter(|f| f.stage != "generation").all(|f| f.spend_usd == 0.0));
    let disabled = live.funnel.iter().find(|f| f.stage == "escalation").unwrap();
    assert_eq!(disabled.reason, "the escalation target big-model is disabled");
    let order: Vec<&str> = live.funnel.iter().map(|f| f.stage.as_str()).collect();
    let position = |stage: &str| order.iter().position(|s| *s == stage).unwrap();
    assert!(
        position("exact_cache") < position("retrieval") && position("retrieval") < position("escalation")
    );

    // A week: daily points; the next day's run counts there.
    let week = metrics::dashboard(lore, Range { from: at(16, 0, 0), to: at(23, 0, 0) }).await.unwrap();
    assert_eq!(week.granularity, Granularity::Day);
    assert_eq!(week.series.len(), 7);
    assert_eq!((week.series[4].totals.queries, week.series[5].totals.queries), (21, 1));
    assert_eq!(week.totals.refusals, 3);

    // A rebuild from the runs gives exactly the same aggregates.
    let rebuilt = metrics::rebuild(lore).await.unwrap();
    assert_eq!(rebuilt.runs, 22);
    assert_eq!(metrics::dashboard(lore, day).await.unwrap(), live);
    assert_eq!(metrics::analytics(lore, &everything, day, Some("role:support")).await.unwrap(), support);
    assert_eq!(metrics::dashboard(lore, Range { from: at(16, 0, 0), to: at(23, 0, 0) }).await.unwrap(), week);

    // The aggregates come from the rollups alone: without the runs table
    // they are unchanged.
    lore.db.execute_unprepared("DROP TABLE answer_run").await.unwrap();
    assert_eq!(metrics::dashboard(lore, day).await.unwrap(), live);

    // A range must end after it starts.
    let backwards = Range { from: at(21, 0, 0), to: at(20, 0, 0) };
    assert!(matches!(metrics::dashboard(lore, backwards).await, Err(engine::Error::InvalidInput(_))));
}

/// A generated run for the folding tests.
fn generated(at: DateTime<Utc>, question: String, refused: bool) -> answer_run::Model {
    answer_run::Model {
        id: uuid::Uuid::new_v4().to_string(),
        created_at: at,
        surface: "api".to_owned(),
        key_id: None,
        profile_version: 1,
        question,
        cache_status: "miss".to_owned(),
        refused,
        grounded: !refused,
        escalated: false,
        model: None,
        stages: stages(if refused { "nothing" } else { "miss" }, 0.001),
        input_tokens: 0,
        output_tokens: 0,
        estimated_cost_usd: 0.001,
        estimated_savings_usd: 0.0,
        latency_ms: 100.0,
        audience: None,
        asked_by: None,
        reply: None,
    }
}

fn run_facts(run: answer_run::Model) -> engine::metrics::RunFacts {
    engine::metrics::RunFacts::decode(&run).unwrap()
}

async fn query_rows(lore: &Lore, day: DateTime<Utc>) -> Vec<entity::rollup_count::Model> {
    use entity::rollup_count::Column as C;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    entity::rollup_count::Entity::find()
        .filter(C::Day.eq(day))
        .filter(C::Kind.eq("query"))
        .all(&lore.db)
        .await
        .unwrap()
}

/// November 10 has `KEPT_PER_DAY` questions asked twice (by `support`) and
/// 30 asked once (by everyone); November 12 (today, for the fold) as many.
/// Folding keeps the day's totals and its top of the list, and leaves today
/// alone; each audience keeps its own top, so the rare questions, the whole
/// of everyone's list, stay listed for that audience.
async fn folding(lore: &Lore) {
    let kept = metrics::KEPT_PER_DAY;
    let by = |mut run: answer_run::Model, audience: &str| {
        run.audience = Some(audience.to_owned());
        run_facts(run)
    };
    let mut contribution = metrics::Contribution::default();
    for day in [10, 12] {
        for i in 0..kept {
            for minute in [1, 2] {
                let run = generated(at(day, 9, minute), format!("popular question {i}"), false);
                contribution.add(&by(run, "role:support"));
            }
        }
        for i in 0..30 {
            let run = generated(at(day, 10, 0), format!("rare question {i}"), true);
            contribution.add(&by(run, "everyone"));
        }
    }
    contribution.insert_into(&lore.db).await.unwrap();
    let tenth = Range { from: at(10, 0, 0), to: at(11, 0, 0) };
    let before = metrics::dashboard(lore, tenth).await.unwrap();
    assert_eq!(before.totals.queries, (2 * kept + 30) as i64);
    assert_eq!(query_rows(lore, at(10, 0, 0)).await.len(), kept + 30);

    let closed = metrics::close_days(lore, at(12, 8, 0)).await.unwrap();
    assert_eq!(closed, metrics::Closed { days: 1, folded: 30, tails: 1 }, "30 rare questions; 30 gaps fit");

    let rows = query_rows(lore, at(10, 0, 0)).await;
    assert_eq!(rows.len(), kept + 1);
    let tail = rows.iter().find(|row| row.key.is_empty()).expect("a tail row");
    assert_eq!(tail.count, 30);
    assert!((tail.spend_usd - 0.03).abs() < 1e-9, "{}", tail.spend_usd);
    assert!(rows.iter().filter(|row| !row.key.is_empty()).all(|row| row.count == 2));

    let after = metrics::dashboard(lore, tenth).await.unwrap();
    assert_eq!(after, before, "totals, series and the top of every list are unchanged");
    assert_eq!(after.content_gaps.len(), 10, "gaps are listed, not folded into the tail");
    assert!(after.top_queries.iter().all(|q| !q.query.is_empty() && q.count == 2));
    let everything = engine::sources::Reader::Everything;
    let everyone = metrics::analytics(lore, &everything, tenth, Some("everyone")).await.unwrap();
    assert_eq!(after.audiences, ["everyone", "role:support"]);
    assert_eq!(everyone.top_queries.len(), 10, "everyone's rare questions outlive the fold");
    assert!(everyone.top_queries.iter().all(|q| q.query.starts_with("rare question") && q.count == 1));

    // Today is not folded, and a second pass changes nothing.
    assert_eq!(query_rows(lore, at(12, 0, 0)).await.len(), kept + 30);
    assert_eq!(metrics::close_days(lore, at(12, 9, 0)).await.unwrap(), metrics::Closed::default());
    // The next day, November 12 is closed and folded too.
    let next = metrics::close_days(lore, at(13, 0, 30)).await.unwrap();
    assert_eq!(next, metrics::Closed { days: 1, folded: 30, tails: 1 });
    assert_eq!(query_rows(lore, at(12, 0, 0)).await.len(), kept + 1);
}

/// Runs queued much faster than they are written: more than one batch, the
/// same few refused questions many times within a batch, key usage between
/// them. Every run is written with its rollups, each refusal counts once in
/// its gap, each use in its key's usage, and a read sees them all without
/// being told to wait.
async fn recorded_behind(lore: &Lore) {
    const RUNS: u32 = 600;
    let key = answer_key(lore, "busy").await;
    for i in 0..RUNS {
        let refused = i % 3 == 0;
        let question = if refused { format!("missing topic {}", i % 4) } else { format!("question {i}") };
        let gap =
            refused.then(|| Gap { key: question.clone(), asked: format!("Missing topic {}? ({i})", i % 4) });
        lore.recorder().run(generated(at(20, 9, i % 60), question, refused), gap).await.unwrap();
        if i % 2 == 0 {
            lore.recorder().key_usage(&key.id, 0.001).await.unwrap();
        }
    }
    let listed = engine::keys::list(lore).await.unwrap();
    let busy = listed.iter().find(|k| k.key.id == key.id).unwrap();
    assert_eq!(busy.queries_7d, i64::from(RUNS / 2));
    assert!((busy.estimated_cost_7d - 0.3).abs() < 1e-9, "{}", busy.estimated_cost_7d);
    assert!(busy.key.last_used_at.is_some());
    let gaps = runs::gaps(lore, 10).await.unwrap();
    let mut counted: Vec<(&str, i64)> = gaps.iter().map(|g| (g.question.as_str(), g.count)).collect();
    counted.sort();
    let expected: Vec<(&str, i64)> = vec![
        ("missing topic 0", 50),
        ("missing topic 1", 50),
        ("missing topic 2", 50),
        ("missing topic 3", 50),
    ];
    assert_eq!(counted, expected);
    assert!(
        gaps.iter().all(|g| g.example.starts_with("Missing topic")),
        "the example is the question as asked"
    );
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(answer_run::Entity::find().count(&lore.db).await.unwrap(), u64::from(RUNS));
    let day = metrics::dashboard(lore, Range { from: at(20, 0, 0), to: at(21, 0, 0) }).await.unwrap();
    assert_eq!((day.totals.queries, day.totals.refusals), (i64::from(RUNS), i64::from(RUNS / 3)));
}

#[tokio::test]
async fn runs_recorded_behind_the_request_are_all_written_on_sqlite() {
    let (lore, _dir) = support::open().await;
    recorded_behind(&lore).await;
}

#[tokio::test]
async fn rollups_on_sqlite_count_exactly_and_rebuild_to_the_same() {
    let (lore, _dir) = support::open().await;
    exercise(&lore).await;
}

#[tokio::test]
async fn closed_days_fold_their_long_tail_on_sqlite() {
    let (lore, _dir) = support::open().await;
    folding(&lore).await;
}

#[tokio::test]
async fn rollups_on_postgres_count_exactly_and_rebuild_to_the_same() {
    let (lore, _dir, admin, name) = on_postgres("lore_rollups").await;
    // Folding first: the rebuild in `exercise` closes the days up to today.
    folding(&lore).await;
    exercise(&lore).await;
    drop(lore);
    let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

#[tokio::test]
async fn runs_recorded_behind_the_request_are_all_written_on_postgres() {
    let (lore, _dir, admin, name) = on_postgres("lore_behind").await;
    recorded_behind(&lore).await;
    drop(lore);
    let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

/// Two replicas folding the same closed days at the same moment (each
/// `lore serve` folds every hour and at start) fold each row once: the
/// second waits for the first and finds nothing left to fold.
#[tokio::test]
async fn two_replicas_folding_at_once_count_each_row_once_on_postgres() {
    let (a, _dir, admin, name) = on_postgres("lore_fold_twice").await;
    let url = a.settings.database_url();
    let (b, _dir_b) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url));
    })
    .await;
    let kept = metrics::KEPT_PER_DAY;
    let days = 1..=6;
    let mut contribution = metrics::Contribution::default();
    for day in days.clone() {
        for i in 0..kept {
            contribution.add(&run_facts(generated(at(day, 9, 0), format!("popular question {i}"), false)));
            contribution.add(&run_facts(generated(at(day, 9, 1), format!("popular question {i}"), false)));
        }
        for i in 0..30 {
            contribution.add(&run_facts(generated(at(day, 10, 0), format!("rare question {i}"), false)));
        }
    }
    contribution.insert_into(&a.db).await.unwrap();

    let (first, second) =
        tokio::join!(metrics::close_days(&a, at(8, 0, 0)), metrics::close_days(&b, at(8, 0, 0)));
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first.folded + second.folded, 30 * days.clone().count(), "{first:?} {second:?}");
    for day in days {
        let rows = query_rows(&a, at(day, 0, 0)).await;
        assert_eq!(rows.len(), kept + 1, "day {day}");
        let tail = rows.iter().find(|row| row.key.is_empty()).expect("a tail row");
        assert_eq!(tail.count, 30, "day {day}: each rare question once in the tail");
        let range = Range { from: at(day, 0, 0), to: at(day + 1, 0, 0) };
        let totals = metrics::dashboard(&a, range).await.unwrap().totals;
        assert_eq!(totals.queries, (2 * kept + 30) as i64, "day {day}");
    }
    drop((a, b));
    let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

/// 1,000 answers spread over two replicas, recorded behind their requests
/// at the same time, the same questions on both (so both add to the same
/// rollup rows): the Dashboard counts exactly 1,000, and each question and
/// gap exactly as often as it was asked.
#[tokio::test]
async fn a_thousand_runs_over_two_replicas_count_exactly_on_postgres() {
    let (a, _dir, admin, name) = on_postgres("lore_two_recorders").await;
    let url = a.settings.database_url();
    let (b, _dir_b) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url));
    })
    .await;
    async fn record_half(lore: &Lore, half: u32) {
        for i in (half..1_000).step_by(2) {
            let refused = i % 4 == 0;
            let question = if refused {
                format!("missing topic {}", (i / 4) % 5)
            } else {
                format!("question {}", i % 25)
            };
            let gap = refused.then(|| Gap { key: question.clone(), asked: question.clone() });
            lore.recorder().run(generated(at(20, 9, i % 60), question, refused), gap).await.unwrap();
        }
        lore.recorder().flush().await.unwrap();
    }
    tokio::join!(record_half(&a, 0), record_half(&b, 1));

    let day = metrics::dashboard(&a, Range { from: at(20, 0, 0), to: at(21, 0, 0) }).await.unwrap();
    assert_eq!((day.totals.queries, day.totals.refusals), (1_000, 250));
    // Each of the 25 answered questions was asked 30 times (750 / 25).
    let answered: Vec<_> = day.top_queries.iter().filter(|q| q.query.starts_with("question")).collect();
    assert!(!answered.is_empty() && answered.iter().all(|q| q.count == 30), "{:?}", day.top_queries);
    // And each of the 5 missing topics 50 times (250 / 5).
    let gaps = runs::gaps(&a, 10).await.unwrap();
    assert_eq!(gaps.len(), 5, "{gaps:?}");
    assert!(gaps.iter().all(|g| g.count == 50), "{gaps:?}");
    drop((a, b));
    let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

/// A Lore on a new database of the local PostgreSQL server; with the admin
/// connection and the name, to drop it after.
async fn on_postgres(prefix: &str) -> (Lore, tempfile::TempDir, sea_orm::DatabaseConnection, String) {
    let admin_url = std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let admin = Database::connect(&admin_url).await.expect("the local PostgreSQL server is up");
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    let (lore, dir) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url.to_string()));
    })
    .await;
    (lore, dir, admin, name)
}

#[test]
fn latency_slots_are_ten_percent_wide() {
    assert_eq!(metrics::latency_slot(0.2), 0);
    assert_eq!(metrics::latency_slot(1.0), 0);
    for ms in [1.5, 9.0, 30.0, 250.0, 4_000.0, 90_000.0] {
        let upper = metrics::slot_upper_ms(metrics::latency_slot(ms));
        assert!(upper >= ms && upper < ms * 1.1 + 1e-9, "{ms} → {upper}");
    }
}

#[tokio::test]
async fn a_run_whose_trace_cannot_be_read_is_an_error_not_an_empty_funnel() {
    let (lore, _dir) = support::open().await;
    let mut run = generated(at(20, 9, 0), "how do i back up".into(), false);
    run.stages = json!({"stage": "not a list of stages"});
    let err = metrics::record_run(&lore, run.clone()).await.unwrap_err().to_string();
    assert!(err.contains(&run.id) && err.contains("trace"), "{err}");
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(answer_run::Entity::find().count(&lore.db).await.unwrap(), 0, "nothing was stored");
}

#[tokio::test]
async fn near_duplicate_refusals_form_one_content_gap_with_their_count() {
    let (lore, _dir) = support::open().await;
    let refused = [
        "how do i export my data to csv",
        "how do i export my data to csv",
        "how can i export data as a csv file",
        "export data to csv",
        "what is the refund policy",
    ];
    for (i, question) in refused.into_iter().enumerate() {
        let run = Run {
            at: at(20, 9, i as u32),
            surface: "api",
            key: None,
            question,
            outcome: "nothing",
            cost: 0.0,
            latency_ms: 5.0,
        };
        record(&lore, &run).await;
    }
    lore.flush_writes().await;
    let day = metrics::dashboard(&lore, Range { from: at(20, 0, 0), to: at(21, 0, 0) }).await.unwrap();
    let groups: Vec<(&str, i64, usize)> =
        day.gap_groups.iter().map(|g| (g.label.as_str(), g.count, g.questions.len())).collect();
    assert_eq!(
        groups,
        vec![("how do i export my data to csv", 4, 3), ("what is the refund policy", 1, 1)],
        "{:#?}",
        day.gap_groups
    );
    // The ungrouped list still counts each wording on its own.
    assert_eq!(day.content_gaps.len(), 4);

    // A later load reuses the vectors it has and embeds the new wording.
    let run = Run {
        at: at(20, 10, 0),
        surface: "api",
        key: None,
        question: "which regions is the service hosted in",
        outcome: "nothing",
        cost: 0.0,
        latency_ms: 5.0,
    };
    record(&lore, &run).await;
    lore.flush_writes().await;
    let later = metrics::dashboard(&lore, Range { from: at(20, 0, 0), to: at(21, 0, 0) }).await.unwrap();
    let counts: Vec<(&str, i64)> = later.gap_groups.iter().map(|g| (g.label.as_str(), g.count)).collect();
    assert_eq!(
        counts,
        vec![
            ("how do i export my data to csv", 4),
            ("what is the refund policy", 1),
            ("which regions is the service hosted in", 1),
        ]
    );
}
