//! `lore providers add|list|probe` and `lore keys create|list|revoke`: the
//! same engine calls as the Providers and Access screens. `providers add` is
//! the quick add; `keys create` prints the raw key once.

use anyhow::Context;
use engine::audit::Actor;
use engine::keys::{self, NewKey};
use engine::providers::{self, QuickAdd};
use engine::settings::Secret;
use engine::{Lore, Settings};

use crate::cli::{KeysCommand, ProvidersCommand};
use crate::command_output::{fail, invalid, print_json, CommandError};
use crate::http::access::{created_key, key_view};
use crate::http::providers::{account_view, overview, target_view};

const ACTOR: Actor = Actor::System;

async fn open(settings: Settings) -> anyhow::Result<Lore> {
    Lore::open(settings).await.context("opening Lore")
}

pub async fn providers(settings: Settings, command: ProvidersCommand) -> anyhow::Result<()> {
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
            let (account, target) =
                providers::quick_add(&lore, &ACTOR, QuickAdd { kind, endpoint, api_key, model, name })
                    .await
                    .map_err(fail)?;
            if json {
                print_json(&serde_json::json!({
                    "account": account_view(account),
                    "target": target_view(&lore, target),
                }));
            } else {
                println!(
                    "Added {} ({}): {} answered in {} ms and now generates answers.",
                    account.name,
                    account.endpoint,
                    target.model,
                    target.probe_latency_ms.unwrap_or_default()
                );
            }
        }
        ProvidersCommand::List { json } => {
            let overview = overview(&lore).await.map_err(fail)?;
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
            let view = target_view(&lore, probed);
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
            return Err(CommandError::new("probe_failed", message).with_details(&view).into());
        }
    }
    Ok(())
}

pub async fn keys(settings: Settings, command: KeysCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        KeysCommand::Create { name, kind, scopes, origins, rate_limit, json } => {
            let (key, raw) = keys::create(
                &lore,
                &ACTOR,
                NewKey { name, kind, scopes, origins, rate_limit_per_minute: rate_limit },
            )
            .await
            .map_err(fail)?;
            let created = created_key(&lore, key, raw);
            if json {
                print_json(&created);
            } else {
                println!("{}", created.raw_key);
                eprintln!(
                    "This is the only time the key is shown; store it now. Its id is {}.",
                    created.key.id
                );
                if let Some(snippet) = &created.snippet {
                    eprintln!("Paste this into a page of an allowed origin:\n{snippet}");
                }
            }
        }
        KeysCommand::List { json } => {
            let views: Vec<_> = keys::list(&lore).await.map_err(fail)?.into_iter().map(key_view).collect();
            if json {
                print_json(&views);
            } else if views.is_empty() {
                println!("No access keys yet. Create one with `lore keys create --name … --kind secret --scope answer`.");
            } else {
                for key in views {
                    println!(
                        "{}  {}…  {:<6} {:<7} {:<30} {} queries in 7 days  {}",
                        key.id,
                        key.prefix,
                        key.kind,
                        key.status,
                        key.scopes.join(","),
                        key.queries_7d,
                        key.name
                    );
                }
            }
        }
        KeysCommand::Revoke { key, json } => {
            let revoked = keys::revoke(&lore, &ACTOR, &key).await.map_err(fail)?.key;
            if json {
                print_json(&serde_json::json!({"id": revoked.id, "status": revoked.status}));
            } else {
                println!("Revoked {} ({}…).", revoked.name, revoked.prefix);
            }
        }
    }
    Ok(())
}
