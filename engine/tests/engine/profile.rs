//! Profile versions on both databases: created at the first index from the
//! chosen persona; two saves from the same base cannot both win; a restore
//! serves a prior version's whole snapshot at once.

use crate::support;

use engine::audit::Actor;
use engine::profile::{self, Details, PersonaChoice, ProfileError};
use engine::{Error, Lore};
use sea_orm::ConnectionTrait;

fn admin() -> Actor {
    Actor::Account("ada".into())
}

#[tokio::test]
async fn no_profile_exists_until_the_first_index_starts_then_it_follows_the_chosen_persona() {
    let (lore, _dir) = support::open().await;
    assert!(profile::active(&lore).await.unwrap().is_none());
    let choice = PersonaChoice {
        persona: "customer_support".into(),
        details: Details { organisation: Some("Acme".into()), ..Details::default() },
    };
    profile::choose_persona(&lore, &admin(), choice).await.unwrap();
    assert!(profile::active(&lore).await.unwrap().is_none(), "choosing a persona creates no profile");

    let source = engine::sources::create(
        &lore,
        &admin(),
        engine::sources::NewSource {
            name: "Files".into(),
            kind: "upload".into(),
            config: None,
            volatility: None,
            audience: None,
        },
    )
    .await
    .unwrap();
    // Queuing alone is the job queue's business; starting an index makes the profile.
    engine::ingest::jobs::enqueue(&lore, Some(&source.id), false, "test").await.unwrap();
    assert!(profile::active(&lore).await.unwrap().is_none(), "the queue creates no profile");
    engine::ingest::lifecycle::start_run(&lore, Some(&source.id), false, "test").await.unwrap();

    let active = profile::active(&lore).await.unwrap().expect("the first index created the profile");
    assert_eq!(active.version, 1);
    assert_eq!(active.snapshot.persona, "customer_support");
    assert!(active.snapshot.prompt.starts_with("You are a customer-support agent for Acme."));
    // A second index leaves it alone.
    engine::ingest::lifecycle::start_run(&lore, None, true, "test").await.unwrap();
    assert_eq!(profile::versions(&lore).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_held_by_the_process_that_starts_it_makes_the_profile_too() {
    let (lore, _dir) = support::open().await;
    let source = engine::sources::create(
        &lore,
        &admin(),
        engine::sources::NewSource {
            name: "Files".into(),
            kind: "upload".into(),
            config: None,
            volatility: None,
            audience: None,
        },
    )
    .await
    .unwrap();
    let held = engine::ingest::lifecycle::start_claimed(&lore, Some(&source.id), false, "bench", "process-1")
        .await
        .unwrap();
    assert_eq!(held.lease_owner.as_deref(), Some("process-1"), "{held:?}");
    let active = profile::active(&lore).await.unwrap().expect("the first index created the profile");
    assert_eq!(active.version, 1);
}

async fn concurrent_saves_from_one_base(lore: &Lore) {
    let v1 = profile::ensure(lore, &admin(), "it_helpdesk", Details::default()).await.unwrap();
    let mut a = v1.snapshot.clone();
    a.prompt = "Prompt A".into();
    let mut b = v1.snapshot.clone();
    b.prompt = "Prompt B".into();
    let actor = admin();
    let (first, second) = tokio::join!(
        profile::save(lore, &actor, v1.version, a, Some("a".into())),
        profile::save(lore, &actor, v1.version, b, Some("b".into())),
    );
    let (won, lost) = match (first, second) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (Ok(_), Ok(_)) => panic!("both saves from version 1 won"),
        (Err(a), Err(b)) => panic!("both saves failed: {a} / {b}"),
    };
    assert!(
        matches!(lost, Error::Profile(ProfileError::VersionConflict { base: 1, active: 2 })),
        "the loser is told which version is active: {lost:?}"
    );
    let active = profile::active(lore).await.unwrap().unwrap();
    assert_eq!(active.version, 2);
    assert_eq!(active.snapshot.prompt, won.snapshot.prompt, "the winner serves, untouched");
    assert_eq!(profile::versions(lore).await.unwrap().len(), 2, "the loser left no version behind");

    // A save from the stale base is refused even when nothing races it.
    let stale = profile::save(lore, &admin(), 1, v1.snapshot.clone(), None).await;
    assert!(matches!(stale, Err(Error::Profile(ProfileError::VersionConflict { .. }))));

    // Restoring version 1 serves its whole snapshot at once; version 2 stays listed.
    let restored = profile::restore(lore, &admin(), 1, Some(2), false).await.unwrap();
    assert!(restored.active);
    let active = profile::active(lore).await.unwrap().unwrap();
    assert_eq!(active.version, 1);
    assert_eq!(active.snapshot, v1.snapshot);
    let versions = profile::versions(lore).await.unwrap();
    assert_eq!(
        versions.iter().map(|v| (v.version, v.active)).collect::<Vec<_>>(),
        vec![(2, false), (1, true)]
    );
    // A restore guarded by a version that is no longer active is refused.
    let guarded = profile::restore(lore, &admin(), 2, Some(2), false).await;
    assert!(matches!(guarded, Err(Error::Profile(ProfileError::VersionConflict { .. }))));
    // The next save from version 1 becomes version 3, based on 1.
    let mut c = v1.snapshot.clone();
    c.behavior.refusal = "Not in the knowledge base.".into();
    let v3 = profile::save(lore, &admin(), 1, c, None).await.unwrap();
    assert_eq!((v3.version, v3.based_on), (3, Some(1)));
}

#[tokio::test]
async fn two_saves_from_the_same_base_on_sqlite_exactly_one_wins() {
    let (lore, _dir) = support::open().await;
    concurrent_saves_from_one_base(&lore).await;
}

#[tokio::test]
async fn two_saves_from_the_same_base_on_postgres_exactly_one_wins() {
    let (url, name) = support::postgres().await;
    let (lore, _dir) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url.clone()));
    })
    .await;
    concurrent_saves_from_one_base(&lore).await;
    drop(lore);
    support::drop_postgres(&name).await;
}

#[tokio::test]
async fn invalid_snapshots_are_refused_and_nothing_is_stored() {
    let (lore, _dir) = support::open().await;
    let v1 = profile::ensure(&lore, &admin(), "sales_engineer", Details::default()).await.unwrap();
    let mut bad = v1.snapshot.clone();
    bad.retrieval.top_k = 0;
    let refused = profile::save(&lore, &admin(), 1, bad, None).await;
    assert!(matches!(refused, Err(Error::Profile(ProfileError::Invalid(_)))));
    let mut unknown = v1.snapshot.clone();
    unknown.persona = "pirate".into();
    assert!(matches!(
        profile::save(&lore, &admin(), 1, unknown, None).await,
        Err(Error::Profile(ProfileError::UnknownPersona(_)))
    ));
    assert_eq!(profile::versions(&lore).await.unwrap().len(), 1);
    assert_eq!(profile::active(&lore).await.unwrap().unwrap().version, 1);
}

#[tokio::test]
async fn numbers_out_of_range_or_not_finite_are_refused_before_anything_is_stored() {
    let (lore, _dir) = support::open().await;
    let v1 = profile::ensure(&lore, &admin(), "sales_engineer", Details::default()).await.unwrap();
    // 1e39 reads into an f32 as infinity, which JSON stores as null: the
    // version could never be read again. 3e38 is finite, but the fused
    // score overflows and retrieval returns nothing.
    for weight in [f32::INFINITY, f32::NAN, 3e38, -0.1, 1.5] {
        let mut bad = v1.snapshot.clone();
        bad.retrieval.vector_weight = weight;
        let refused = profile::save(&lore, &admin(), 1, bad, None).await;
        assert!(matches!(refused, Err(Error::Profile(ProfileError::Invalid(_)))), "{weight}: {refused:?}");
        let change = engine::tuning::Change { text_weight: Some(weight), ..Default::default() };
        let refused = engine::tuning::apply(&lore, &admin(), change).await;
        assert!(matches!(refused, Err(Error::Profile(ProfileError::Invalid(_)))), "{weight}: {refused:?}");
    }
    for similarity in [f32::NAN, f32::INFINITY] {
        let mut bad = v1.snapshot.clone();
        bad.cache.min_similarity = similarity;
        assert!(profile::save(&lore, &admin(), 1, bad, None).await.is_err(), "{similarity}");
    }
    assert_eq!(profile::versions(&lore).await.unwrap().len(), 1, "no refused save stored a version");
    assert!(engine::readiness::assess(&lore).await.is_ok());
}

/// Makes version `number`'s stored snapshot unreadable, as a record written
/// by a release without today's checks was (`"vector_weight": null`).
async fn spoil(lore: &Lore, number: i32) {
    let backend = lore.db.get_database_backend();
    lore.db
        .execute(sea_orm::Statement::from_sql_and_values(
            backend,
            match backend {
                sea_orm::DatabaseBackend::Postgres => {
                    "UPDATE profile_version SET snapshot = $1 WHERE version = $2"
                }
                _ => "UPDATE profile_version SET snapshot = ? WHERE version = ?",
            },
            [
                serde_json::json!({"persona": "sales_engineer", "retrieval": {"vector_weight": null}}).into(),
                number.into(),
            ],
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_unreadable_active_version_never_takes_answering_down_and_the_console_can_replace_it() {
    let (lore, _dir) = support::open().await;
    let v1 = profile::ensure(&lore, &admin(), "sales_engineer", Details::default()).await.unwrap();
    let mut second = v1.snapshot.clone();
    second.prompt = "Second prompt".into();
    let v2 = profile::save(&lore, &admin(), 1, second, None).await.unwrap();
    spoil(&lore, v2.version).await;

    // Answers are made with version 1, the newest that reads, and say so.
    let serving = profile::active(&lore).await.unwrap().expect("a version serves");
    assert_eq!(serving.version, 1);
    assert_eq!(serving.snapshot, v1.snapshot);
    let (unreadable, why) = serving.serving_instead_of.clone().expect("it says it stands in");
    assert_eq!(unreadable, 2);
    assert!(why.contains("unreadable"), "{why}");
    // Readiness reports it without refusing to answer on its account.
    let state = engine::readiness::assess(&lore).await.unwrap();
    let check =
        state.checks.iter().find(|c| c.concern == engine::readiness::Concern::ProfileVersion).unwrap();
    assert_eq!(check.status, engine::readiness::Status::Degraded);
    assert!(check.detail.contains("version 2 cannot be read"), "{}", check.detail);
    assert!(!state.reasons.iter().any(|r| r.starts_with("profile_version")), "{:?}", state.reasons);
    assert_eq!(state.active_profile_version, Some(1));
    // The history still lists what can be read; the tuning screen still opens.
    assert_eq!(profile::versions(&lore).await.unwrap().iter().map(|v| v.version).collect::<Vec<_>>(), [1]);
    engine::tuning::overview(&lore).await.unwrap();

    // The console shows version 1 as the one serving, so it saves from it.
    let mut fixed = v1.snapshot.clone();
    fixed.prompt = "Fixed prompt".into();
    let v3 = profile::save(&lore, &admin(), 1, fixed.clone(), None).await.unwrap();
    let active = profile::active(&lore).await.unwrap().unwrap();
    assert_eq!((active.version, active.serving_instead_of), (v3.version, None));
    assert_eq!(active.snapshot, fixed);
    let state = engine::readiness::assess(&lore).await.unwrap();
    let check =
        state.checks.iter().find(|c| c.concern == engine::readiness::Concern::ProfileVersion).unwrap();
    assert_eq!(check.status, engine::readiness::Status::Ok);

    // Restoring works the same way from a spoiled active version.
    spoil(&lore, v3.version).await;
    let restored = profile::restore(&lore, &admin(), 1, Some(1), false).await.unwrap();
    assert_eq!(restored.version, 1);
    assert_eq!(profile::active(&lore).await.unwrap().unwrap().serving_instead_of, None);
}

/// Waits (up to 5 s) for the judgings listed to satisfy `ok`.
async fn judgings_until(
    lore: &Lore,
    ok: impl Fn(&[engine::judging::Judging]) -> bool,
) -> Vec<engine::judging::Judging> {
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = engine::judging::list(&lore.db).await.unwrap();
        if ok(&listed) {
            return listed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the judgings never got there: {listed:#?}");
}

#[tokio::test]
async fn a_judging_is_listed_with_its_progress_while_it_runs_and_gone_when_it_ends() {
    use engine::judging::{self, Step, Tracker};
    use entity::cluster_setting::{Column, Entity};
    use sea_orm::sea_query::Expr;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

    let (lore, _dir) = support::open().await;
    assert!(judging::list(&lore.db).await.unwrap().is_empty());
    let what = "Binds the generation role to smollm2";
    let tracker = Tracker::start(&lore.db, what, "ada", Step::Candidate).await.unwrap();
    let listed = judging::list(&lore.db).await.unwrap();
    assert_eq!(listed.len(), 1, "listed from its start");
    assert_eq!((listed[0].what.as_str(), listed[0].by.as_str()), (what, "ada"));
    assert_eq!(
        (listed[0].step, listed[0].done, listed[0].total, listed[0].version),
        (Step::Candidate, 0, 0, None)
    );

    // Progress is written behind the judging, for any process to read.
    tracker.candidate(7);
    tracker.report(Step::Candidate, 2, 5);
    judgings_until(&lore, |l| {
        l.len() == 1 && (l[0].step, l[0].done, l[0].total, l[0].version) == (Step::Candidate, 2, 5, Some(7))
    })
    .await;
    tracker.report(Step::Baseline, 1, 5);
    judgings_until(&lore, |l| l.len() == 1 && (l[0].step, l[0].done) == (Step::Baseline, 1)).await;
    tracker.finish().await;
    assert!(judging::list(&lore.db).await.unwrap().is_empty(), "gone as soon as it finished");

    // A judging whose request was abandoned (its future dropped) goes too.
    let abandoned = Tracker::start(&lore.db, what, "ada", Step::Shadow).await.unwrap();
    drop(abandoned);
    judgings_until(&lore, |l| l.is_empty()).await;

    // A record no process has refreshed for a while is a dead process's:
    // left out, and shown again once its judging moves.
    let quiet = Tracker::start(&lore.db, what, "ada", Step::Candidate).await.unwrap();
    let long_ago = chrono::Utc::now() - chrono::Duration::from_std(judging::STALE_AFTER).unwrap() * 2;
    Entity::update_many()
        .col_expr(Column::UpdatedAt, Expr::value(long_ago))
        .filter(Column::Key.starts_with("judging."))
        .exec(&lore.db)
        .await
        .unwrap();
    assert!(judging::list(&lore.db).await.unwrap().is_empty(), "a stale record is left out");
    quiet.report(Step::Candidate, 1, 3);
    judgings_until(&lore, |l| l.len() == 1 && l[0].done == 1).await;
    quiet.finish().await;
    assert!(judging::list(&lore.db).await.unwrap().is_empty());
}
