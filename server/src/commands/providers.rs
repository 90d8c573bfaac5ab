//! `lore providers add|list|probe`: the same engine calls as the Providers
//! screen; `providers add` is the quick add.

use app::wire::{
    AccountView, BindingVerdictView, JudgingView, ProvidersOverview, QuickAddResult, TargetView,
};
use engine::profile;
use engine::providers::{self, QuickAdd};
use engine::settings::Secret;
use engine::Settings;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{fail, invalid, print_json, CommandError};
use super::{open, ACTOR};
use crate::cli::ProvidersCommand;
use crate::http::codes;

pub async fn run(settings: Settings, command: ProvidersCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        ProvidersCommand::Add { kind, endpoint, model, api_key_env, name, json } => {
            let api_key = match api_key_env {
                Some(var) => Some(Secret::new(
                    std::env::var(&var)
                        .map_err(|_| invalid(format!("the environment variable {var} is not set")))?,
                )),
                None => None,
            };
            eprintln!("Probing {model} with a short chat completion…");
            let judging = follow_judging(&lore, json);
            let added =
                profile::quick_add(&lore, &ACTOR, QuickAdd { kind, endpoint, api_key, model, name }).await;
            judging.stop();
            let (account, target, rebound) = added.map_err(fail)?;
            let added = QuickAddResult {
                account: AccountView::from(account),
                target: TargetView::from(providers::TargetStatus::of(&lore, target)),
                verdict: BindingVerdictView::of(&rebound),
            };
            if json {
                print_json(&added);
            } else {
                let what = match &added.verdict {
                    Some(verdict) => verdict.message(),
                    None => "It now generates answers.".to_owned(),
                };
                println!(
                    "Added {} ({}): {} answered in {} ms. {what}",
                    added.account.name,
                    added.account.endpoint,
                    added.target.model,
                    added.target.probe_latency_ms.unwrap_or_default()
                );
            }
        }
        ProvidersCommand::List { json } => {
            let overview = ProvidersOverview::from(providers::overview(&lore).await.map_err(fail)?);
            if json {
                print_json(&overview);
            } else {
                for account in &overview.accounts {
                    println!(
                        "{}  {} ({}, {}) {}",
                        account.id,
                        account.name,
                        account.kind,
                        account.placement.replace('_', "-"),
                        account.endpoint
                    );
                    for target in overview.targets.iter().filter(|t| t.account_id == account.id) {
                        let reason =
                            target.state_reason.as_deref().map(|r| format!(" — {r}")).unwrap_or_default();
                        println!(
                            "  {}  {} {} [{}]{reason}",
                            target.id, target.capability, target.model, target.state
                        );
                    }
                }
                if overview.accounts.is_empty() {
                    println!("No providers yet. Add one with `lore providers add --kind … --model …`.");
                }
                for role in &overview.roles {
                    let bound =
                        role.model.clone().unwrap_or_else(|| format!("(unbound: {})", role.unbound_means));
                    println!("role {:<11} {bound}", role.role);
                }
            }
        }
        ProvidersCommand::Probe { target, json } => {
            let (probed, probe) = providers::probe(&lore, &ACTOR, &target).await.map_err(fail)?;
            let view = TargetView::from(providers::TargetStatus::of(&lore, probed));
            if probe.ok {
                if json {
                    print_json(&view);
                } else {
                    println!("{} answered in {} ms: {}.", view.model, probe.latency_ms, view.state);
                }
                return Ok(());
            }
            // The probe's error is the provider's reply: the operator's to read.
            let message = format!("{} failed its probe: {}", view.model, probe.error.unwrap_or_default());
            return Err(CommandError::new(codes::PROBE_FAILED.key, message).with_details(&view).into());
        }
    }
    Ok(())
}

/// The judging a quick add starts (with golden questions, the eval gate
/// judges the new model before it is bound), shown as a progress bar on
/// standard error, read from the judging records as any console reads them.
struct FollowedJudging {
    task: tokio::task::JoinHandle<()>,
    bar: ProgressBar,
}

impl FollowedJudging {
    fn stop(self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

fn follow_judging(lore: &engine::Lore, quiet: bool) -> FollowedJudging {
    let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let db = lore.db.clone();
    let since = chrono::Utc::now() - chrono::Duration::seconds(1);
    let ours = ACTOR.label();
    let shown = bar.clone();
    let task = tokio::spawn(async move {
        loop {
            let under_way = engine::judging::list(&db).await.unwrap_or_default();
            if let Some(judging) = under_way.into_iter().rfind(|j| j.by == ours && j.started_at >= since) {
                let view = JudgingView::from(judging);
                shown.set_length(view.total);
                shown.set_position(view.done);
                shown.set_message(format!("{}: {}", view.what, view.describe()));
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    });
    FollowedJudging { task, bar }
}
