//! The Access screen: create secret and widget keys (the raw value is shown
//! once, with a copy button, and cannot be shown again), list them with
//! prefix, kind, scopes, status and 7-day usage, and revoke them; and the
//! users and roles keys act as ([`UsersAndRoles`]); and the assistants
//! signed in over OAuth, with revoke ([`Connections`]).

use leptos::prelude::*;

use super::users::UsersAndRoles;
use crate::client;
use crate::routes;
use crate::wire::{ConnectionView, CreateKeyRequest, CreatedKey, KeyView, NoBody};

#[component]
pub fn Access() -> impl IntoView {
    let keys = RwSignal::new(None::<Result<Vec<KeyView>, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let created = RwSignal::new(None::<CreatedKey>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            keys.set(Some(client::get::<Vec<KeyView>>(routes::KEYS.url()).await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));

    view! {
        <section class="screen access">
            <h1>"Access"</h1>
            <p class="lede">
                "Secret keys are for servers calling POST /answer, POST /retrieve and the tool server; never put one in a web page. Widget keys are for the embeddable widget: they can only ask, and only from the origins you list."
            </p>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            {move || created.get().map(|c| view! { <OnceShown created=c dismiss=move || created.set(None)/> })}
            <NewKeyForm notice created refresh/>
            <div class="panel">
                <h2>"Keys"</h2>
                {move || match keys.get() {
                    None => view! { <p class="loading">"Loading keys…"</p> }.into_any(),
                    Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                    Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"No keys yet."</p> }.into_any(),
                    Some(Ok(list)) => view! {
                        <table class="keys">
                            <thead><tr><th>"Name"</th><th>"Key"</th><th>"Kind"</th><th>"Scopes"</th><th>"Status"</th><th>"Last 7 days"</th><th></th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|key| view! { <KeyRow key notice refresh/> }).collect_view()}
                            </tbody>
                        </table>
                    }
                    .into_any(),
                }}
            </div>
            <div class="panel connect-assistant">
                <h2>"Connect an assistant (MCP)"</h2>
                <p>"Assistants and agents reach Lore's tool server at "<code>"/mcp"</code>" on this server (the operations API's tools at "<code>"/operation/mcp"</code>", when configured)."</p>
                <p>"Claude, ChatGPT and VS Code sign in: add the address as a connector, and the person signs in to Lore and allows it; it then acts as their Lore user (listed below, with revoke)."</p>
                <p>"Clients that take a header use "<code>"x-api-key"</code>": create a secret key with the mcp scope for a user above (add answer and retrieve to let it use those tools): it acts with that user's role, and the configuration to paste is shown with the key."</p>
            </div>
            <Connections notice/>
            <UsersAndRoles/>
        </section>
    }
}

/// The one time a raw key is visible.
#[component]
fn OnceShown(created: CreatedKey, dismiss: impl Fn() + Send + Sync + 'static) -> impl IntoView {
    let copied = RwSignal::new(None::<&'static str>);
    // Copies `text` and says which of the two was copied.
    let copy = move |what: &'static str, text: String| {
        move |_| {
            #[cfg(feature = "hydrate")]
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&text);
                copied.set(Some(what));
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (what, &text);
        }
    };
    let label = move |what: &'static str, idle: &'static str| {
        move || if copied.get() == Some(what) { "Copied" } else { idle }
    };
    view! {
        <div class="panel once-shown" role="alert">
            <h2>{format!("Your new key “{}”", created.key.name)}</h2>
            <p>"Copy it now: it is shown only this once and cannot be retrieved later."</p>
            <code class="raw-key">{created.raw_key.clone()}</code>
            <button type="button" on:click=copy("key", created.raw_key.clone())>{label("key", "Copy")}</button>
            {created.snippet.clone().map(|s| view! {
                <p>"Widget snippet: paste it into a page of one of the key's allowed origins."</p>
                <pre class="snippet">{s.clone()}</pre>
                <button type="button" class="copy-snippet" on:click=copy("snippet", s)>{label("snippet", "Copy snippet")}</button>
            })}
            {created.assistant_config.clone().map(|c| view! {
                <p>"Connect an assistant: paste this into an MCP client's configuration (Claude, Cursor, VS Code and other clients that speak Streamable HTTP)."</p>
                <pre class="assistant-config">{c.clone()}</pre>
                <button type="button" class="copy-assistant" on:click=copy("assistant", c)>{label("assistant", "Copy configuration")}</button>
            })}
            <button type="button" class="secondary" on:click=move |_| dismiss()>"Done"</button>
        </div>
    }
}

#[component]
fn NewKeyForm(
    notice: RwSignal<Option<(bool, String)>>,
    created: RwSignal<Option<CreatedKey>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let kind = RwSignal::new("secret".to_owned());
    let answer = RwSignal::new(true);
    let retrieve = RwSignal::new(true);
    let mcp = RwSignal::new(false);
    let operations = RwSignal::new(false);
    let origins = RwSignal::new(String::new());
    let rate = RwSignal::new("30".to_owned());
    let user = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = if kind.get() == "widget" {
            CreateKeyRequest {
                name: name.get(),
                kind: "widget".to_owned(),
                scopes: Vec::new(),
                origins: origins
                    .get()
                    .split([',', '\n', ' '])
                    .map(str::trim)
                    .filter(|o| !o.is_empty())
                    .map(str::to_owned)
                    .collect(),
                rate_limit_per_minute: Some(rate.get().trim().parse::<u32>().unwrap_or(30)),
                user: None,
            }
        } else {
            let scopes: Vec<String> =
                [("answer", answer), ("retrieve", retrieve), ("mcp", mcp), ("operations", operations)]
                    .into_iter()
                    .filter(|(_, on)| on.get())
                    .map(|(scope, _)| scope.to_owned())
                    .collect();
            CreateKeyRequest {
                name: name.get(),
                kind: "secret".to_owned(),
                scopes,
                origins: Vec::new(),
                rate_limit_per_minute: None,
                user: Some(user.get().trim().to_owned()).filter(|u| !u.is_empty()),
            }
        };
        leptos::task::spawn_local(async move {
            match client::send::<_, CreatedKey>("POST", routes::KEYS.url(), &body).await {
                Ok(key) => {
                    name.set(String::new());
                    notice.set(None);
                    created.set(Some(key));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <form class="panel new-key" on:submit=submit>
            <h2>"Create a key"</h2>
            <label>"Name" <input name="name" required bind:value=name placeholder="Support site backend"/></label>
            <label>
                "Kind"
                <select name="kind" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    <option value="secret">"Secret (server to server)"</option>
                    <option value="widget">"Widget (embeddable, answer only)"</option>
                </select>
            </label>
            <Show
                when=move || kind.get() == "widget"
                fallback=move || view! {
                    <fieldset class="scopes">
                        <legend>"Scopes"</legend>
                        <label><input type="checkbox" name="scope-answer" bind:checked=answer/>" answer"</label>
                        <label><input type="checkbox" name="scope-retrieve" bind:checked=retrieve/>" retrieve"</label>
                        <label><input type="checkbox" name="scope-mcp" bind:checked=mcp/>" mcp"</label>
                        <label><input type="checkbox" name="scope-operations" bind:checked=operations/>" operations"</label>
                    </fieldset>
                    <label>
                        "Acts as user"
                        <input name="user" bind:value=user placeholder="needed for mcp and operations"/>
                    </label>
                }
            >
                <label>"Allowed origins" <input name="origins" bind:value=origins placeholder="https://docs.example.com"/></label>
                <label>"Requests per minute" <input name="rate" type="number" min="1" bind:value=rate/></label>
            </Show>
            <button type="submit">"Create key"</button>
        </form>
    }
}

#[component]
fn KeyRow(
    key: KeyView,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let id = key.id.clone();
    let confirming = RwSignal::new(false);
    let revoke = move |_| {
        let id = id.clone();
        confirming.set(false);
        leptos::task::spawn_local(async move {
            match client::send::<_, KeyView>("POST", &routes::KEY_REVOKE.at([&id]), &NoBody {}).await {
                Ok(k) => notice.set(Some((true, format!("Revoked “{}”.", k.name)))),
                Err(message) => notice.set(Some((false, message))),
            }
            refresh();
        });
    };
    let active = key.status == "active";
    let scopes = if key.kind == "widget" {
        format!("answer · {}", key.origins.join(", "))
    } else {
        key.scopes.join(", ")
    };
    view! {
        <tr data-key=key.prefix.clone()>
            <td>{key.name.clone()}</td>
            <td><code>{format!("{}…", key.prefix)}</code></td>
            <td>{key.kind.clone()}</td>
            <td>{scopes}</td>
            <td><span class={if active { "badge ok" } else { "badge bad" }}>{key.status.clone()}</span></td>
            <td class="usage" data-helpful=key.helpful_7d.to_string() data-unhelpful=key.unhelpful_7d.to_string()>
                {format!("{} queries · ${:.4}", key.queries_7d, key.estimated_cost_7d)}
                {crate::wire::helpful_percent(key.helpful_7d, key.unhelpful_7d)
                    .map(|rate| format!(" · {rate} helpful ({} of {} rated)", key.helpful_7d, key.helpful_7d + key.unhelpful_7d))
                    .unwrap_or_default()}
            </td>
            <td>
                {active.then(|| view! {
                    <Show
                        when=move || confirming.get()
                        fallback=move || view! { <button type="button" class="danger" on:click=move |_| confirming.set(true)>"Revoke"</button> }
                    >
                        <button type="button" class="danger confirm" on:click=revoke.clone()>"Confirm revoke"</button>
                        <button type="button" class="secondary" on:click=move |_| confirming.set(false)>"Keep"</button>
                    </Show>
                })}
            </td>
        </tr>
    }
}

/// The assistants signed in over OAuth: one row per live grant, with
/// revoke.
#[component]
fn Connections(notice: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    let connections = RwSignal::new(None::<Result<Vec<ConnectionView>, String>>);
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            connections.set(Some(client::get::<Vec<ConnectionView>>(routes::OAUTH_CONNECTIONS.url()).await));
        });
    });
    let revoke = move |grant: String, name: String| {
        leptos::task::spawn_local(async move {
            let path = routes::OAUTH_CONNECTION_REVOKE.at([&grant]);
            match client::send::<_, Vec<ConnectionView>>("POST", &path, &NoBody {}).await {
                Ok(left) => {
                    notice.set(Some((true, format!("Revoked “{name}”: its next request is refused."))));
                    connections.set(Some(Ok(left)));
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <div class="panel connections">
            <h2>"Connected assistants"</h2>
            {move || match connections.get() {
                None => view! { <p class="loading">"Loading…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => {
                    view! { <p class="empty">"No assistant has signed in."</p> }.into_any()
                }
                Some(Ok(list)) => view! {
                    <table class="connections">
                        <thead><tr><th>"Assistant"</th><th>"Acts as"</th><th>"Scopes"</th><th>"Tool server"</th><th>"Connected"</th><th>"Last used"</th><th></th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|c| {
                                let (grant, name) = (c.grant_id.clone(), c.client_name.clone());
                                view! {
                                    <tr data-grant=c.grant_id.clone()>
                                        <td>
                                            {c.logo_uri.clone().map(|logo| view! { <img class="logo" src=logo alt="" width="16" height="16"/> })}
                                            " "{c.client_name.clone()}
                                        </td>
                                        <td>{c.acts_as.clone()}</td>
                                        <td>{c.scopes.join(", ")}</td>
                                        <td><code>{c.resource.clone()}</code></td>
                                        <td>{c.created_at.clone()}</td>
                                        <td>{c.last_used_at.clone().unwrap_or_else(|| "never".to_owned())}</td>
                                        <td><button type="button" class="danger" on:click=move |_| revoke(grant.clone(), name.clone())>"Revoke"</button></td>
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
