//! `lore ask QUESTION`: the answer pipeline at the terminal, and `--rate`,
//! its rating by the one who asked.

use std::io::{BufRead, Write};

use engine::answer::feedback::{self, Asked, Rating};
use engine::Settings;

use super::open;
use super::output::{fail, print_json};

/// `--rate [VERDICT]` and `--comment`.
pub struct Rate {
    /// `ask` (at the prompt), `helpful` or `unhelpful`.
    pub verdict: String,
    pub comment: Option<String>,
}

pub async fn run(
    settings: Settings,
    question: &str,
    answer_as: Option<&str>,
    json: bool,
    rate: Option<Rate>,
) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    super::models::ensure(&lore, json).await?;
    let ask = engine::answer::Ask {
        question: question.to_owned(),
        surface: engine::answer::Surface::Cli,
        key_id: None,
        asker: engine::asker::Asker::answering_as(answer_as).map_err(fail)?,
        by: engine::answer::feedback::Asked::Terminal,
    };
    let answered = engine::answer::answer(&lore, ask).await;
    // The run and the cached answer are written behind the answer.
    lore.flush_writes().await;
    let answered = app::wire::AnswerResponse::from(answered.map_err(fail)?);
    if json {
        print_json(&answered);
    } else {
        print_answer(&answered);
    }
    if let Some(rate) = rate {
        // Reading the terminal blocks: off the runtime's threads.
        let trace_id = answered.trace.id.clone();
        let Some(rating) = tokio::task::spawn_blocking(move || ask_rating(&trace_id, rate)).await?? else {
            return Ok(());
        };
        let rated = feedback::rate(&lore, &Asked::Terminal, rating).await.map_err(fail)?;
        let verdict = if rated.helpful { "helpful" } else { "unhelpful" };
        eprintln!("Rated {verdict}: thank you.");
    }
    Ok(())
}

/// The rating `rate` gives, asking at the prompt (on stderr, answered on
/// stdin) for what it does not say; none when the answer at the prompt is
/// neither yes nor no.
fn ask_rating(trace_id: &str, rate: Rate) -> anyhow::Result<Option<Rating>> {
    let mut lines = std::io::stdin().lock().lines();
    let mut prompt = |text: &str| -> anyhow::Result<String> {
        eprint!("{text}");
        std::io::stderr().flush()?;
        Ok(lines.next().transpose()?.unwrap_or_default().trim().to_owned())
    };
    let helpful = match rate.verdict.as_str() {
        "helpful" => true,
        "unhelpful" => false,
        "ask" => match prompt("Was this answer helpful? [y/n] ")?.to_lowercase().as_str() {
            "y" | "yes" => true,
            "n" | "no" => false,
            _ => {
                eprintln!("Not rated.");
                return Ok(None);
            }
        },
        other => {
            anyhow::bail!("--rate takes `helpful` or `unhelpful` (or nothing, to be asked), not `{other}`")
        }
    };
    let comment = match rate.comment {
        Some(comment) => Some(comment),
        None if !helpful && rate.verdict == "ask" => Some(prompt("What was wrong or missing? (optional) ")?),
        None => None,
    };
    Ok(Some(Rating { trace_id: trace_id.to_owned(), helpful, comment }))
}

fn print_answer(answered: &app::wire::AnswerResponse) {
    println!("{}", answered.answer);
    let link = |url: Option<&str>| url.map(|u| format!(" <{u}>")).unwrap_or_default();
    if !answered.citations.is_empty() {
        println!();
        for c in &answered.citations {
            println!("[{}] {}{}", c.index, c.title, link(c.url.as_deref()));
            // The sentences of this passage the answer's statements rest on.
            for statement in answered.statements.iter().filter(|s| s.citation == c.index) {
                println!("    \u{201c}{}\u{201d}", statement.support.quote);
            }
        }
    }
    if !answered.related.is_empty() {
        println!("\nThese passages may be related:");
        for r in &answered.related {
            println!("- {}{}\n    \u{201c}{}\u{201d}", r.title, link(r.url.as_deref()), r.sentence.quote);
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
}
