//! `lore keys create|list|revoke`: the same engine calls as the Access
//! screen; `keys create` prints the raw key once.

use app::wire::{CreatedKey, KeyView};
use engine::keys::{self, NewKey};
use engine::Settings;

use super::output::{fail, print_json};
use super::{open, ACTOR};
use crate::cli::KeysCommand;

pub async fn run(settings: Settings, command: KeysCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    match command {
        KeysCommand::Create { name, kind, scopes, origins, rate_limit, user, json } => {
            let new = NewKey { name, kind, scopes, origins, rate_limit_per_minute: rate_limit, user };
            let created = CreatedKey::from(keys::issue(&lore, &ACTOR, new).await.map_err(fail)?);
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
            let views: Vec<_> =
                keys::list(&lore).await.map_err(fail)?.into_iter().map(KeyView::from).collect();
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
            let revoked = KeyView::from(keys::revoke(&lore, &ACTOR, &key).await.map_err(fail)?);
            if json {
                print_json(&revoked);
            } else {
                println!("Revoked {} ({}…).", revoked.name, revoked.prefix);
            }
        }
    }
    Ok(())
}
