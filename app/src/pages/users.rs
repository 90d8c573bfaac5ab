//! Users and roles, on the Access screen: roles with a permission editor
//! (HarperDB's permission tree as JSON, started from a preset: super user,
//! structure user, read-only on a database) and users with their role.
//! Everything goes through `POST /operation` with the admin's session, so
//! the engine validates the tree (an error names the field by its path)
//! and audits each change, as for any other caller.

use leptos::prelude::*;
use serde_json::{json, Value};

use crate::client;
use crate::wire::{RoleRow, UserRow};

/// A preset's permission tree: `super`, `structure` (of `database`, or
/// every database when it is blank), or `read_only` on `database`'s
/// `tables`.
pub fn preset(kind: &str, database: &str, tables: &[String]) -> Value {
    let database = database.trim();
    match kind {
        "super" => json!({"super_user": true}),
        "structure" if database.is_empty() => json!({"structure_user": true}),
        "structure" => json!({"structure_user": [database]}),
        "read_only" => {
            let tables: serde_json::Map<String, Value> = tables
                .iter()
                .map(|t| {
                    (t.clone(), json!({"read": true, "insert": false, "update": false, "delete": false}))
                })
                .collect();
            json!({ database: {"tables": tables} })
        }
        _ => json!({}),
    }
}

/// A role's permission in a few words, for the list.
pub fn summary(permission: &Value) -> String {
    if permission["super_user"] == true {
        return "super user".into();
    }
    let mut parts = Vec::new();
    match &permission["structure_user"] {
        Value::Bool(true) => parts.push("structure of every database".to_owned()),
        Value::Array(list) if !list.is_empty() => {
            let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
            parts.push(format!("structure of {}", names.join(", ")));
        }
        _ => {}
    }
    if let Some(object) = permission.as_object() {
        for (database, value) in object {
            if let Some(tables) = value.get("tables").and_then(Value::as_object) {
                parts.push(format!("{} table(s) of {database}", tables.len()));
            }
        }
    }
    if let Some(operations) = permission["operations"].as_array() {
        parts.push(format!("{} operation(s)", operations.len()));
    }
    if parts.is_empty() {
        "nothing yet".into()
    } else {
        parts.join(" · ")
    }
}

async fn operation<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, String> {
    client::send::<_, T>("POST", "/operation", &body).await
}

#[component]
pub fn UsersAndRoles() -> impl IntoView {
    let roles = RwSignal::new(None::<Result<Vec<RoleRow>, String>>);
    let users = RwSignal::new(None::<Result<Vec<UserRow>, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            roles.set(Some(operation(json!({"operation": "list_roles"})).await));
            users.set(Some(operation(json!({"operation": "list_users"})).await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));
    // Runs an operation that changes something, then says how it went.
    let change = move |body: Value, done: String| {
        leptos::task::spawn_local(async move {
            match operation::<Value>(body).await {
                Ok(_) => notice.set(Some((true, done))),
                Err(message) => notice.set(Some((false, message))),
            }
            refresh();
        });
    };
    view! {
        <div class="panel users-roles">
            <h2>"Users and roles"</h2>
            <p class="lede">
                "A key with the operations or mcp scope acts as a user, with its role's permissions. Signed-in admins act as super users."
            </p>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            <NewRoleForm notice change/>
            {move || match roles.get() {
                None => view! { <p class="loading">"Loading roles…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"No roles yet."</p> }.into_any(),
                Some(Ok(list)) => view! {
                    <table class="roles">
                        <thead><tr><th>"Role"</th><th>"May"</th><th></th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|role| {
                                let name = role.role.clone();
                                let drop = move |_| change(json!({"operation": "drop_role", "id": name.clone()}), format!("Dropped the role “{name}”."));
                                view! {
                                    <tr data-role=role.role.clone()>
                                        <td>{role.role.clone()}</td>
                                        <td>{summary(&role.permission)}</td>
                                        <td><button type="button" class="danger" on:click=drop>"Drop role"</button></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }
                .into_any(),
            }}
            <NewUserForm roles change/>
            {move || match users.get() {
                None => view! { <p class="loading">"Loading users…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"No users yet."</p> }.into_any(),
                Some(Ok(list)) => view! {
                    <table class="users">
                        <thead><tr><th>"User"</th><th>"Role"</th><th>"Status"</th><th></th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|user| {
                                let name = user.username.clone();
                                let drop = move |_| change(json!({"operation": "drop_user", "username": name.clone()}), format!("Dropped “{name}”; its keys are revoked."));
                                view! {
                                    <tr data-user=user.username.clone()>
                                        <td>{user.username.clone()}</td>
                                        <td>{user.role.role.clone()}</td>
                                        <td><span class={if user.active { "badge ok" } else { "badge bad" }}>{if user.active { "active" } else { "inactive" }}</span></td>
                                        <td><button type="button" class="danger" on:click=drop>"Drop user"</button></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }
                .into_any(),
            }}
        </div>
    }
}

#[component]
fn NewRoleForm(
    notice: RwSignal<Option<(bool, String)>>,
    change: impl Fn(Value, String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let kind = RwSignal::new("read_only".to_owned());
    let database = RwSignal::new(String::new());
    let permission = RwSignal::new("{}".to_owned());
    // Fills the editor from the preset; read-only lists the database's tables.
    let apply = move |_| {
        let (kind, database) = (kind.get(), database.get());
        leptos::task::spawn_local(async move {
            let tables = if kind == "read_only" {
                if database.trim().is_empty() {
                    notice.set(Some((false, "Name the database the role may read.".into())));
                    return;
                }
                match operation::<Value>(
                    json!({"operation": "describe_database", "database": database.trim()}),
                )
                .await
                {
                    Ok(described) => {
                        described.as_object().map(|t| t.keys().cloned().collect()).unwrap_or_default()
                    }
                    Err(message) => {
                        notice.set(Some((false, message)));
                        return;
                    }
                }
            } else {
                Vec::new()
            };
            let tree = preset(&kind, &database, &tables);
            permission.set(serde_json::to_string_pretty(&tree).unwrap_or_default());
        });
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match serde_json::from_str::<Value>(&permission.get()) {
            Ok(tree) => {
                let role = name.get().trim().to_owned();
                change(
                    json!({"operation": "add_role", "role": role, "permission": tree}),
                    format!("Added the role “{role}”."),
                );
            }
            Err(err) => notice.set(Some((false, format!("The permission is not JSON: {err}")))),
        }
    };
    view! {
        <form class="new-role" on:submit=submit>
            <h3>"Add a role"</h3>
            <label>"Role name" <input name="role-name" required bind:value=name placeholder="docs_reader"/></label>
            <label>
                "Preset"
                <select name="preset" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    <option value="read_only">"Read-only on a database"</option>
                    <option value="structure">"Structure user (tables of a database, or all when blank)"</option>
                    <option value="super">"Super user"</option>
                </select>
            </label>
            <label>"Database" <input name="preset-database" bind:value=database placeholder="dev"/></label>
            <button type="button" class="secondary" on:click=apply>"Use preset"</button>
            <label>
                "Permission (HarperDB's permission tree)"
                <textarea name="permission" rows="8" prop:value=move || permission.get() on:input=move |ev| permission.set(event_target_value(&ev))></textarea>
            </label>
            <button type="submit">"Add role"</button>
        </form>
    }
}

#[component]
fn NewUserForm(
    roles: RwSignal<Option<Result<Vec<RoleRow>, String>>>,
    change: impl Fn(Value, String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let username = RwSignal::new(String::new());
    let role = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = username.get().trim().to_owned();
        // The first role when none was picked (the select shows it chosen).
        let chosen = Some(role.get())
            .filter(|r| !r.is_empty())
            .or_else(|| {
                roles.get().and_then(|r| r.ok()).and_then(|list| list.first().map(|r| r.role.clone()))
            })
            .unwrap_or_default();
        username.set(String::new());
        change(
            json!({"operation": "add_user", "username": name, "role": chosen, "active": true}),
            format!("Added “{name}”. Create a key that acts as this user below."),
        );
    };
    view! {
        <form class="new-user" on:submit=submit>
            <h3>"Add a user"</h3>
            <label>"User name" <input name="username" required bind:value=username placeholder="support-bot"/></label>
            <label>
                "Role"
                <select name="user-role" on:change=move |ev| role.set(event_target_value(&ev))>
                    {move || roles.get().and_then(|r| r.ok()).unwrap_or_default().into_iter().map(|r| {
                        view! { <option value=r.role.clone()>{r.role.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
            <button type="submit">"Add user"</button>
        </form>
    }
}
