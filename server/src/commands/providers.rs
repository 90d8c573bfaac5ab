//! `lore providers add|list|probe`: the same engine calls as the Providers
//! screen; `providers add` is the quick add.

use app::wire::{AccountView, BindingVerdictView, ProvidersOverview, QuickAddResult, TargetView};
use engine::profile;
use engine::providers::{self, QuickAdd};
use engine::settings::Secret;
use engine::Settings;

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
            let (account, target, rebound) =
                profile::quick_add(&lore, &ACTOR, QuickAdd { kind, endpoint, api_key, model, name })
                    .await
                    .map_err(fail)?;
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
