//! `lore ask QUESTION`: the answer pipeline at the terminal.

use engine::Settings;

use super::open;
use super::output::{fail, print_json};

pub async fn run(
    settings: Settings,
    question: &str,
    answer_as: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    super::models::ensure(&lore, json).await?;
    let ask = engine::answer::Ask {
        question: question.to_owned(),
        surface: engine::answer::Surface::Cli,
        key_id: None,
        asker: engine::asker::Asker::answering_as(answer_as).map_err(fail)?,
    };
    let answered = engine::answer::answer(&lore, ask).await;
    // The run and the cached answer are written behind the answer.
    lore.flush_writes().await;
    let answered = app::wire::AnswerResponse::from(answered.map_err(fail)?);
    if json {
        print_json(&answered);
        return Ok(());
    }
    println!("{}", answered.answer);
    if !answered.citations.is_empty() {
        println!();
        for c in &answered.citations {
            println!(
                "[{}] {}{}",
                c.index,
                c.title,
                c.url.as_deref().map(|u| format!(" <{u}>")).unwrap_or_default()
            );
        }
    }
    let outcome = if answered.refused { "refused" } else { "answered" };
    println!(
        "\n{outcome} · cache {} · profile version {} · {} · trace {}",
        answered.cache.status,
        answered.profile_version,
        answered.trace.model.as_deref().unwrap_or("no model call"),
        answered.trace.id
    );
    for stage in &answered.trace.stages {
        println!(
            "  {:<15} {:<11} {:>8.1} ms  {}",
            stage.stage, stage.decision, stage.duration_ms, stage.reason
        );
    }
    Ok(())
}
