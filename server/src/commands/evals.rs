//! `lore evals run|list|add`: the golden questions at the terminal. `run`
//! answers them as a version would (the active one by default), stores the
//! result with the version and exits non-zero when the version got worse
//! since its last eval on the same set: a check for a CI pipeline after a
//! content, model or prompt change.

use engine::Settings;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{fail, print_json, CommandError};
use super::{open, ACTOR};
use crate::cli::EvalsCommand;
use crate::http::codes;
use app::wire::{EvalRunView, GoldenRequest, GoldenView};

pub async fn run(settings: Settings, command: EvalsCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        EvalsCommand::Run { version, json } => {
            let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} golden questions {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let progress = |done: usize, total: usize| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            };
            let rerun = engine::evals::rerun(&lore, version, &progress).await;
            bar.finish_and_clear();
            let view = EvalRunView::try_from(rerun.map_err(fail)?).map_err(fail)?;
            if json && view.regressions.is_empty() {
                print_json(&view);
            } else if !json {
                print_report(&view);
            }
            if !view.regressions.is_empty() {
                let message = format!(
                    "version {} got worse since its last eval: {}",
                    view.version,
                    view.regressions.join("; ")
                );
                return Err(CommandError::new(codes::EVAL_REGRESSION.key, message)
                    .with_details(&view)
                    .into());
            }
            Ok(())
        }
        EvalsCommand::List { json } => {
            let set: Vec<GoldenView> =
                engine::evals::list(&lore).await.map_err(fail)?.into_iter().map(GoldenView::from).collect();
            if json {
                print_json(&set);
            } else {
                for golden in &set {
                    let expects = if golden.should_refuse {
                        "a refusal".to_owned()
                    } else if golden.expected_facts.is_empty() {
                        "an answer".to_owned()
                    } else {
                        golden.expected_facts.iter().map(|f| format!("“{f}”")).collect::<Vec<_>>().join(", ")
                    };
                    println!("{}  {}  expects {expects}", golden.id, golden.question);
                }
            }
            Ok(())
        }
        EvalsCommand::Add { question, fact, refuse, source, asked_as, json } => {
            let request = GoldenRequest {
                question,
                expected_facts: fact,
                should_refuse: refuse,
                expected_source: source,
                asked_as,
                origin: Some("cli".into()),
            };
            let added =
                engine::evals::add(&lore, &ACTOR, request.try_into().map_err(fail)?).await.map_err(fail)?;
            let view = GoldenView::from(added);
            if json {
                print_json(&view);
            } else {
                println!("Added golden question {}: {}", view.id, view.question);
            }
            Ok(())
        }
    }
}

fn print_report(view: &EvalRunView) {
    let mark = |ok: bool| if ok { "right" } else { "WRONG" };
    for r in &view.report.results {
        let what = if r.error.is_some() {
            "failed"
        } else if r.refused {
            "refused"
        } else {
            "answered"
        };
        let missing = if r.missing_facts.is_empty() || r.should_refuse {
            String::new()
        } else {
            format!(" (missing: {})", r.missing_facts.join(", "))
        };
        println!("  {:<5} {:<8} {:>7.0} ms  {}{missing}", mark(r.correct), what, r.latency_ms, r.question);
    }
    let t = &view.report.totals;
    println!(
        "\nVersion {}: {} of {} right · {} refused that should be answered · {} wrong answers · ${:.4}",
        view.version, t.correct, t.questions, t.wrongly_refused, t.wrong_answers, t.cost_usd
    );
    if let Some(p) = &view.previous {
        println!(
            "Its previous eval: {} of {} right, {} wrongly refused.",
            p.correct, p.questions, p.wrongly_refused
        );
    }
}
