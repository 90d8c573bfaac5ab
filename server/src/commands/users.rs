//! `lore users …` and `lore roles …`: the same engine calls as the
//! operations `list_users`, `add_user`, … and the Access screen; `--json`
//! prints HarperDB's shapes, as those operations do.

use app::wire::{RoleRow, UserRow};
use engine::appdb::users;
use engine::Settings;

use super::output::{fail, invalid, print_json};
use super::{open, ACTOR};
use crate::cli::{RolesCommand, UsersCommand};

pub async fn run_users(settings: Settings, command: UsersCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let (user, json) = match command {
        UsersCommand::List { json } => {
            let all = users::users(&lore).await.map_err(fail)?;
            if json {
                print_json(&all.iter().map(UserRow::from).collect::<Vec<_>>());
            } else if all.is_empty() {
                println!("No users yet. Add one with `lore users add NAME --role ROLE`.");
            } else {
                for user in all {
                    let state = if user.active { "active" } else { "inactive" };
                    println!("{:<24} {:<8} {}", user.username, state, user.role.name);
                }
            }
            return Ok(());
        }
        UsersCommand::Add { username, role, inactive, json } => {
            (users::add_user(&lore, &ACTOR, &username, &role, !inactive).await.map_err(fail)?, json)
        }
        UsersCommand::Alter { username, role, active, json } => {
            if role.is_none() && active.is_none() {
                return Err(invalid("nothing to change: give --role and/or --active"));
            }
            (users::alter_user(&lore, &ACTOR, &username, role.as_deref(), active).await.map_err(fail)?, json)
        }
        UsersCommand::Drop { username, json } => {
            engine::asker::drop_user(&lore, &ACTOR, &username).await.map_err(fail)?;
            if json {
                print_json(&serde_json::json!({"message": format!("{username} successfully deleted")}));
            } else {
                println!("Dropped {username}; its keys are revoked.");
            }
            return Ok(());
        }
    };
    if json {
        print_json(&UserRow::from(&user));
    } else {
        let state = if user.active { "active" } else { "inactive" };
        println!("{} ({state}) has the role {}.", user.username, user.role.name);
    }
    Ok(())
}

/// `--permission` as JSON, refused with the parser's words.
fn permission(raw: &str) -> anyhow::Result<serde_json::Value> {
    serde_json::from_str(raw).map_err(|err| invalid(format!("--permission is not JSON: {err}")))
}

pub async fn run_roles(settings: Settings, command: RolesCommand) -> anyhow::Result<()> {
    let lore = open(settings).await?;
    let (role, json) = match command {
        RolesCommand::List { json } => {
            let all = users::roles(&lore).await.map_err(fail)?;
            if json {
                print_json(&all.iter().map(RoleRow::from).collect::<Vec<_>>());
            } else if all.is_empty() {
                println!("No roles yet. Add one with `lore roles add NAME --permission '{{\"super_user\": true}}'`.");
            } else {
                for role in all {
                    println!("{:<24} {}  {}", role.name, role.id, role.permission.to_json());
                }
            }
            return Ok(());
        }
        RolesCommand::Add { name, permission: raw, json } => {
            (engine::asker::add_role(&lore, &ACTOR, &name, &permission(&raw)?).await.map_err(fail)?, json)
        }
        RolesCommand::Alter { role, name, permission: raw, json } => {
            let tree = raw.as_deref().map(permission).transpose()?;
            if name.is_none() && tree.is_none() {
                return Err(invalid("nothing to change: give --name and/or --permission"));
            }
            (
                engine::asker::alter_role(&lore, &ACTOR, &role, name.as_deref(), tree.as_ref())
                    .await
                    .map_err(fail)?,
                json,
            )
        }
        RolesCommand::Drop { role, json } => {
            (engine::asker::drop_role(&lore, &ACTOR, &role).await.map_err(fail)?, json)
        }
    };
    if json {
        print_json(&RoleRow::from(&role));
    } else {
        println!("{} ({}): {}", role.name, role.id, role.permission.to_json());
    }
    Ok(())
}
