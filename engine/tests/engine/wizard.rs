//! The setup wizard's server-side state: steps only in order, each refusing
//! with what is missing, `next` past a step whose result exists, `back`, and
//! the progress kept across a reopen of the same data directory.

use crate::support;

use engine::audit::Actor;
use engine::profile::{Details, PersonaChoice};
use engine::sources::NewSource;
use engine::wizard::{self, Step};
use engine::Error;

fn admin() -> Actor {
    Actor::Account("ada".into())
}

fn upload_source() -> NewSource {
    NewSource {
        name: "Runbook".into(),
        kind: "upload".into(),
        config: None,
        volatility: None,
        audience: None,
    }
}

fn refusal(result: engine::Result<wizard::Progress>) -> String {
    match result {
        Err(Error::InvalidInput(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn steps_run_in_order_say_what_is_missing_and_resume_after_a_restart() {
    let (lore, dir) = support::open().await;
    assert_eq!(wizard::progress(&lore).await.unwrap().step, Step::Persona);

    // Out of order, and moving on with nothing done: refused, nothing changes.
    let early = refusal(wizard::add_source(&lore, &admin(), upload_source()).await);
    assert!(early.contains("persona step"), "{early}");
    assert!(refusal(wizard::next(&lore, &admin()).await).contains("choose a persona"));
    assert!(engine::sources::list(&lore).await.unwrap().is_empty(), "the early source was not created");

    // A persona that does not exist is refused by the profile's own check.
    let unknown = PersonaChoice { persona: "astrologer".into(), details: Details::default() };
    assert!(wizard::choose_persona(&lore, &admin(), unknown).await.is_err());
    assert_eq!(wizard::progress(&lore).await.unwrap().step, Step::Persona);

    let choice = PersonaChoice { persona: "customer_support".into(), details: Details::default() };
    assert_eq!(wizard::choose_persona(&lore, &admin(), choice).await.unwrap().step, Step::Source);
    let after_source = wizard::add_source(&lore, &admin(), upload_source()).await.unwrap();
    assert_eq!(after_source.step, Step::Provider);
    let source_id = after_source.source_id.clone().unwrap();
    assert!(
        engine::ingest::jobs::recent(&lore, Some(&source_id), 1).await.unwrap().is_empty(),
        "not synced yet"
    );

    // No provider yet: the wizard cannot move on.
    assert!(refusal(wizard::next(&lore, &admin()).await).contains("add a provider"));

    // Back to the source step; its source exists, so `next` moves on without a second one.
    assert_eq!(wizard::back(&lore, &admin()).await.unwrap().step, Step::Source);
    assert_eq!(wizard::next(&lore, &admin()).await.unwrap().step, Step::Provider);
    assert_eq!(engine::sources::list(&lore).await.unwrap().len(), 1);

    // The progress lives in the database: a new process resumes it.
    drop(lore);
    let settings = engine::Settings {
        data_dir: dir.path().to_owned(),
        models: engine::settings::ModelSettings { dir: Some(support::models_dir()), ..Default::default() },
        ..engine::Settings::default()
    };
    let reopened = engine::Lore::open(settings).await.unwrap();
    let overview = wizard::overview(&reopened).await.unwrap();
    assert_eq!(overview.progress.step, Step::Provider);
    assert_eq!(overview.persona.as_deref(), Some("customer_support"));
    assert_eq!(overview.source.map(|s| s.source.id), Some(source_id));
    assert_eq!(overview.generation_model, None);
}
