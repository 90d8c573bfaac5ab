//! The Providers screen: quick add (type, key, model in one action), the
//! accounts, their model targets with probe state and re-probe, and the
//! execution roles with the role-binding validator's messages. API keys go
//! in through a password field and never come back.

use leptos::prelude::*;

use super::judging::JudgingUnderWay;
use crate::client;
use crate::wire::{
    BindRequest, NoBody, ProviderPresetView, ProvidersOverview, QuickAddRequest, QuickAddResult, RoleView,
    TargetPatch, TargetRequest, TargetView,
};

#[component]
pub fn Providers() -> impl IntoView {
    view! {
        <section class="screen providers">
            <h1>"Providers"</h1>
            <p class="lede">
                "A provider account is an OpenAI-compatible endpoint, or the embedded model that runs inside Lore. A model target is one model through one account for one job; roles say which target does which job. Keys are stored encrypted and never shown again."
            </p>
            <ProviderPanels/>
        </section>
    }
}

/// The Providers screen's working parts (quick add, roles, accounts and
/// targets), also shown in place by the setup wizard's Advanced step.
#[component]
pub(crate) fn ProviderPanels() -> impl IntoView {
    let overview = RwSignal::new(None::<Result<ProvidersOverview, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            overview.set(Some(client::get::<ProvidersOverview>("/admin/providers/").await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));

    view! {
        {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
        <JudgingUnderWay/>
        {move || match overview.get() {
            None => view! { <p class="loading">"Loading providers…"</p> }.into_any(),
            Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
            Some(Ok(data)) => view! {
                <QuickAdd data=data.clone() notice refresh/>
                <Roles data=data.clone() notice refresh/>
                <Targets data notice refresh/>
            }
            .into_any(),
        }}
    }
}

#[component]
fn QuickAdd(
    data: ProvidersOverview,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let kind = RwSignal::new(EMBEDDED.to_owned());
    let endpoint = RwSignal::new(String::new());
    let api_key = RwSignal::new(String::new());
    let model = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let presets = data.presets.clone();
    let remote = move || kind.get() != EMBEDDED;
    let placeholder = move || {
        presets
            .iter()
            .find(|p| p.key == kind.get())
            .and_then(|p| p.endpoint.clone())
            .unwrap_or_else(|| "http://host:port/v1".to_owned())
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let filled = |field: RwSignal<String>| Some(field.get().trim().to_owned()).filter(|v| !v.is_empty());
        let body = QuickAddRequest {
            kind: kind.get(),
            endpoint: filled(endpoint),
            api_key: filled(api_key),
            model: model.get(),
            name: None,
        };
        busy.set(true);
        notice.set(Some((true, "Probing the model with a short chat completion…".into())));
        leptos::task::spawn_local(async move {
            let result = client::send::<_, QuickAddResult>("POST", "/admin/providers/quick-add", &body).await;
            busy.set(false);
            match result {
                Ok(added) => {
                    api_key.set(String::new());
                    let latency = added.target.probe_latency_ms.unwrap_or_default();
                    let text = match &added.verdict {
                        Some(verdict) => {
                            format!("{} answered in {latency} ms. {}", added.target.model, verdict.message())
                        }
                        None => format!(
                            "{} answered in {latency} ms and now generates answers.",
                            added.target.model
                        ),
                    };
                    notice.set(Some((added.verdict.as_ref().is_none_or(|v| v.bound), text)));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <form class="panel quick-add" on:submit=submit>
            <h2>"Quick add"</h2>
            <p class="hint">"Stores the account, registers the model, probes that it answers and points answering at it. If the probe fails, nothing is stored."</p>
            <label>
                "Type"
                <select name="kind" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    {data.presets.iter().map(|p| {
                        view! { <option value=p.key.clone()>{preset_label(p)}</option> }
                    }).collect_view()}
                </select>
            </label>
            <Show when=remote fallback=|| view! { <p class="hint embedded-note">{EMBEDDED_NOTE}</p> }>
                <label>"Endpoint" <input name="endpoint" bind:value=endpoint placeholder=placeholder.clone()/></label>
                <label>"API key" <input name="api_key" type="password" autocomplete="off" bind:value=api_key placeholder="Not needed for most on-node servers"/></label>
            </Show>
            <label>"Model" <input name="model" required=remote bind:value=model placeholder=move || model_placeholder(&kind.get())/></label>
            <button type="submit" disabled=move || busy.get()>"Add and probe"</button>
        </form>
    }
}

/// The embedded provider's kind: a model run inside Lore, no key needed.
pub(crate) const EMBEDDED: &str = "embedded";

/// What choosing the embedded provider means, as the wizard and quick add say it.
pub(crate) const EMBEDDED_NOTE: &str = "No key needed: a small model on this machine; answers are short and basic. Connect a stronger model any time, or bind one to escalation for what the small model cannot ground.";

/// A provider type as the type selects name it: where it runs, and that
/// the embedded one needs nothing.
pub(crate) fn preset_label(preset: &ProviderPresetView) -> String {
    match (preset.key.as_str(), preset.placement.as_deref()) {
        (EMBEDDED, _) => format!("{} — no key needed", preset.name),
        (_, Some("on_node")) => format!("{} (on-node)", preset.name),
        (_, Some(_)) => format!("{} (hosted)", preset.name),
        _ => preset.name.clone(),
    }
}

/// The model field's example for a provider type.
pub(crate) fn model_placeholder(kind: &str) -> &'static str {
    if kind == EMBEDDED {
        "SmolLM2-135M-Instruct.Q4_1.gguf (the default)"
    } else {
        "gpt-4o-mini"
    }
}

fn state_badge(state: &str) -> &'static str {
    match state {
        "ready" => "badge ok",
        "stale" | "unprobed" => "badge warn",
        _ => "badge bad",
    }
}

#[component]
fn Roles(
    data: ProvidersOverview,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let targets = data.targets.clone();
    view! {
        <div class="panel roles">
            <h2>"Roles"</h2>
            <table>
                <thead><tr><th>"Role"</th><th>"Bound to"</th><th>"State"</th><th>"Change"</th></tr></thead>
                <tbody>
                    {data.roles.into_iter().map(|role| view! { <RoleRow role targets=targets.clone() notice refresh/> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn RoleRow(
    role: RoleView,
    targets: Vec<TargetView>,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let choice = RwSignal::new(role.target_id.clone().unwrap_or_default());
    let name = role.role.clone();
    let candidates: Vec<TargetView> =
        targets.into_iter().filter(|t| t.capability == role.capability).collect();
    let bind = move |_| {
        let name = name.clone();
        let target = choice.get();
        let body = BindRequest { target_id: (!target.is_empty()).then_some(target) };
        leptos::task::spawn_local(async move {
            match client::send::<_, ProvidersOverview>("PUT", &format!("/admin/roles/{name}"), &body).await {
                Ok(overview) => {
                    let (ok, text) = match overview.verdict {
                        Some(verdict) => (verdict.bound, verdict.message()),
                        None if name == "embedding" => (true, "The embedding role was updated. The corpus was embedded by another model: retrieval fails closed until a full reindex (Sources → Reindex everything).".to_owned()),
                        None => (true, format!("The {name} role was updated.")),
                    };
                    notice.set(Some((ok, text)));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <tr data-role=role.role.clone()>
            <td>{role.role.clone()}</td>
            <td>{role.model.clone().unwrap_or_else(|| format!("unbound: {}", role.unbound_means))}</td>
            <td>
                {role.state.clone().map(|s| { let class = state_badge(&s); view! { <span class=class>{s}</span> } })}
                {role.state_reason.clone().map(|r| view! { <span class="reason">{r}</span> })}
            </td>
            <td>
                <select name="target" prop:value=move || choice.get() on:change=move |ev| choice.set(event_target_value(&ev))>
                    <option value="">"(unbound)"</option>
                    {candidates.into_iter().map(|t| view! { <option value=t.id.clone()>{format!("{} ({})", t.model, t.state)}</option> }).collect_view()}
                </select>
                <button type="button" on:click=bind>"Bind"</button>
            </td>
        </tr>
    }
}

#[component]
fn Targets(
    data: ProvidersOverview,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let accounts = data.accounts.clone();
    view! {
        <div class="panel targets">
            <h2>"Accounts and model targets"</h2>
            {if data.accounts.is_empty() {
                view! { <p class="empty">"No provider yet: use quick add above."</p> }.into_any()
            } else {
                view! {
                    <ul class="accounts">
                        {accounts.into_iter().map(|account| {
                            let targets: Vec<TargetView> = data.targets.iter().filter(|t| t.account_id == account.id).cloned().collect();
                            view! {
                                <li class="account">
                                    <strong>{account.name.clone()}</strong>
                                    <span class="meta">{format!(" {} · {} · {}", account.kind, account.placement.replace('_', "-"), account.endpoint)}</span>
                                    <span class="meta">{if account.has_api_key { " · key stored" } else { " · no key" }}</span>
                                    <ul class="target-list">
                                        {targets.into_iter().map(|target| view! { <TargetRow target notice refresh/> }).collect_view()}
                                    </ul>
                                    <AddTarget account_id=account.id.clone() notice refresh/>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
                .into_any()
            }}
        </div>
    }
}

#[component]
fn TargetRow(
    target: TargetView,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let id = target.id.clone();
    let target_id = target.id.clone();
    let busy = RwSignal::new(false);
    let probe = move |_| {
        let id = id.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            let url = format!("/admin/targets/{id}/probe");
            let result = client::send::<_, TargetView>("POST", &url, &NoBody {}).await;
            busy.set(false);
            match result {
                Ok(t) if t.state == "ready" => {
                    notice.set(Some((true, format!("{} answered the probe.", t.model))))
                }
                Ok(t) => notice.set(Some((
                    false,
                    t.state_reason.unwrap_or_else(|| format!("{} is {}.", t.model, t.state)),
                ))),
                Err(message) => notice.set(Some((false, message))),
            }
            refresh();
        });
    };
    let price = |p: Option<f64>| p.map(|v| v.to_string()).unwrap_or_default();
    let input_price = RwSignal::new(price(target.input_price_per_mtok));
    let output_price = RwSignal::new(price(target.output_price_per_mtok));
    let patch = move |body: TargetPatch, done: &'static str| {
        let id = target_id.clone();
        leptos::task::spawn_local(async move {
            match client::send::<_, TargetView>("PATCH", &format!("/admin/targets/{id}"), &body).await {
                Ok(t) => notice.set(Some((true, format!("{} {done}.", t.model)))),
                Err(message) => notice.set(Some((false, message))),
            }
            refresh();
        });
    };
    let toggle = {
        let patch = patch.clone();
        let enabled = target.enabled;
        move |_| {
            patch(
                TargetPatch { enabled: Some(!enabled), ..TargetPatch::default() },
                if enabled { "is disabled" } else { "is enabled" },
            )
        }
    };
    let save_prices = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let parse = |raw: String| raw.trim().parse::<f64>().ok();
        // Both prices are sent: a blank one is `null`, which clears it.
        patch(
            TargetPatch {
                enabled: None,
                input_price_per_mtok: Some(parse(input_price.get())),
                output_price_per_mtok: Some(parse(output_price.get())),
            },
            "has new prices",
        );
    };
    view! {
        <li class="target" data-model=target.model.clone()>
            <span class="model">{target.model.clone()}</span>
            <span class="meta">{format!(" {} ", target.capability)}</span>
            <span class=state_badge(&target.state)>{target.state.clone()}</span>
            {target.probe_latency_ms.map(|ms| view! { <span class="meta">{format!(" {ms} ms")}</span> })}
            {target.state_reason.clone().map(|r| view! { <span class="reason">{r}</span> })}
            <button type="button" on:click=probe disabled=move || busy.get()>"Probe"</button>
            <button type="button" on:click=toggle>{if target.enabled { "Disable" } else { "Enable" }}</button>
            <form class="prices" on:submit=save_prices>
                <label>"$ / M input tokens" <input name="input_price" inputmode="decimal" bind:value=input_price/></label>
                <label>"$ / M output tokens" <input name="output_price" inputmode="decimal" bind:value=output_price/></label>
                <button type="submit">"Save prices"</button>
            </form>
        </li>
    }
}

/// Registers another model of an account for one capability; the account's
/// own model list (where the provider lists them) fills the suggestions.
#[component]
fn AddTarget(
    account_id: String,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let capability = RwSignal::new("generation".to_owned());
    let model = RwSignal::new(String::new());
    let listed = RwSignal::new(Vec::<String>::new());
    let list_id = format!("models-{account_id}");
    let list = {
        let account_id = account_id.clone();
        move |_| {
            let account_id = account_id.clone();
            leptos::task::spawn_local(async move {
                match client::get::<Vec<String>>(&format!("/admin/providers/accounts/{account_id}/models"))
                    .await
                {
                    Ok(models) if models.is_empty() => {
                        notice.set(Some((false, "The provider lists no models; type the name.".into())))
                    }
                    Ok(models) => {
                        notice.set(Some((true, format!("The provider lists {} models.", models.len()))));
                        listed.set(models);
                    }
                    Err(message) => notice.set(Some((false, message))),
                }
            });
        }
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = TargetRequest {
            account_id: account_id.clone(),
            capability: capability.get(),
            model: model.get().trim().to_owned(),
            input_price_per_mtok: None,
            output_price_per_mtok: None,
        };
        leptos::task::spawn_local(async move {
            match client::send::<_, TargetView>("POST", "/admin/targets", &body).await {
                Ok(t) => {
                    model.set(String::new());
                    notice.set(Some((
                        true,
                        format!("{} is registered; probe it before binding a role.", t.model),
                    )));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <form class="add-target" on:submit=submit>
            <select name="capability" prop:value=move || capability.get() on:change=move |ev| capability.set(event_target_value(&ev))>
                <option value="generation">"generation"</option>
                <option value="embedding">"embedding"</option>
                <option value="rerank">"rerank"</option>
            </select>
            <input name="target_model" required list=list_id.clone() bind:value=model placeholder="model name"/>
            <datalist id=list_id>
                {move || listed.get().into_iter().map(|m| view! { <option value=m/> }).collect_view()}
            </datalist>
            <button type="button" on:click=list>"List models"</button>
            <button type="submit">"Add model"</button>
        </form>
    }
}
