//! The Providers screen: quick add (type, key, model in one action), an
//! account added on its own, the accounts (edit, rotate the key, delete),
//! their model targets with probe state, re-probe and probe history, the
//! execution roles with the role-binding validator's messages, and the
//! escalation chain's further tiers. API keys go in through a password field
//! and never come back.

use leptos::prelude::*;

use super::judging::JudgingUnderWay;
use crate::client;
use crate::routes;
use crate::wire::{
    AccountRequest, AccountView, BindRequest, NoBody, ProbeView, ProviderPresetView, ProvidersOverview,
    QuickAddRequest, QuickAddResult, RoleView, TargetPatch, TargetRequest, TargetView, TiersRequest,
};

#[component]
pub fn Providers() -> impl IntoView {
    view! {
        <section class="screen providers">
            <h1>"Providers"</h1>
            <p class="lede">
                "A provider account is an endpoint (OpenAI-compatible, or Anthropic's or Google's own API), or the embedded model that runs inside Lore. A model target is one model through one account for one job; roles say which target does which job. Keys are stored encrypted and never shown again."
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
            overview.set(Some(client::get::<ProvidersOverview>(routes::PROVIDERS.url()).await));
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
                <EscalationChain data=data.clone() notice refresh/>
                <Targets data=data.clone() notice refresh/>
                <AddAccount presets=data.presets notice refresh/>
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
            let result = client::send::<_, QuickAddResult>("POST", routes::QUICK_ADD.url(), &body).await;
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
    match kind {
        EMBEDDED => "SmolLM2-135M-Instruct.Q4_1.gguf (the default)",
        "anthropic" => "claude-sonnet-4-5",
        "gemini" => "gemini-2.5-flash",
        _ => "gpt-4o-mini",
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
            match client::send::<_, ProvidersOverview>("PUT", &routes::ROLE.at([&name]), &body).await {
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
                view! { <p class="empty">"No provider yet: use quick add above, or add an account below."</p> }.into_any()
            } else {
                view! {
                    <ul class="accounts">
                        {accounts.into_iter().map(|account| {
                            let targets: Vec<TargetView> = data.targets.iter().filter(|t| t.account_id == account.id).cloned().collect();
                            view! {
                                <li class="account" data-account=account.name.clone()>
                                    <strong>{account.name.clone()}</strong>
                                    <span class="meta">{format!(" {} · {} · {}", account.kind, account.placement.replace('_', "-"), account.endpoint)}</span>
                                    <span class="meta">{if account.has_api_key { " · key stored" } else { " · no key" }}</span>
                                    <EditAccount account=account.clone() notice refresh/>
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
            let url = routes::TARGET_PROBE.at([&id]);
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
            match client::send::<_, TargetView>("PATCH", &routes::TARGET.at([&id]), &body).await {
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
            <ProbeHistory target_id=target.id.clone()/>
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
                match client::get::<Vec<String>>(&routes::ACCOUNT_MODELS.at([&account_id])).await {
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
            match client::send::<_, TargetView>("POST", routes::TARGETS.url(), &body).await {
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

/// An account added on its own (quick add also registers, probes and binds
/// a model): type, name, endpoint and key.
#[component]
fn AddAccount(
    presets: Vec<ProviderPresetView>,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let kind = RwSignal::new("custom".to_owned());
    let name = RwSignal::new(String::new());
    let endpoint = RwSignal::new(String::new());
    let api_key = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let filled = |field: RwSignal<String>| Some(field.get().trim().to_owned()).filter(|v| !v.is_empty());
        let body = AccountRequest {
            name: filled(name),
            kind: kind.get(),
            placement: None,
            endpoint: filled(endpoint),
            api_key: filled(api_key),
        };
        leptos::task::spawn_local(async move {
            match client::send::<_, AccountView>("POST", routes::ACCOUNTS.url(), &body).await {
                Ok(account) => {
                    api_key.set(String::new());
                    name.set(String::new());
                    endpoint.set(String::new());
                    notice.set(Some((
                        true,
                        format!("{} is stored; add its models below, then probe them.", account.name),
                    )));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <form class="panel add-account" on:submit=submit>
            <h2>"Add an account"</h2>
            <p class="hint">"Stores the connection only; register its models afterwards, one per job."</p>
            <label>
                "Type"
                <select name="account_kind" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    {presets.iter().map(|p| view! { <option value=p.key.clone()>{preset_label(p)}</option> }).collect_view()}
                </select>
            </label>
            <label>"Name" <input name="account_name" bind:value=name placeholder="the type's name"/></label>
            <label>"Endpoint" <input name="account_endpoint" bind:value=endpoint placeholder="the type's default"/></label>
            <label>"API key" <input name="account_api_key" type="password" autocomplete="off" bind:value=api_key/></label>
            <button type="submit">"Add account"</button>
        </form>
    }
}

/// An account's edit form (a blank key keeps the stored one; a value
/// rotates it) and its delete button, which the engine refuses while a role
/// is bound to one of its models.
#[component]
fn EditAccount(
    account: AccountView,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let name = RwSignal::new(account.name.clone());
    let endpoint = RwSignal::new(account.endpoint.clone());
    let api_key = RwSignal::new(String::new());
    let (id, kind) = (account.id.clone(), account.kind.clone());
    let save = {
        let id = id.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let key = api_key.get().trim().to_owned();
            let body = AccountRequest {
                name: Some(name.get()),
                kind: kind.clone(),
                placement: None,
                endpoint: Some(endpoint.get()),
                api_key: (!key.is_empty()).then_some(key),
            };
            let url = routes::ACCOUNT.at([&id]);
            leptos::task::spawn_local(async move {
                match client::send::<_, AccountView>("PUT", &url, &body).await {
                    Ok(saved) => {
                        api_key.set(String::new());
                        open.set(false);
                        let said =
                            if body.api_key.is_some() { "its key is replaced" } else { "its key is kept" };
                        notice.set(Some((true, format!("{} is saved; {said}.", saved.name))));
                        refresh();
                    }
                    Err(message) => notice.set(Some((false, message))),
                }
            });
        }
    };
    let delete = move |_| {
        let url = routes::ACCOUNT.at([&id]);
        leptos::task::spawn_local(async move {
            match client::delete(&url).await {
                Ok(()) => {
                    notice.set(Some((true, "The account and its models are deleted.".to_owned())));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <span class="account-actions">
            <button type="button" class="edit-account" on:click=move |_| open.update(|o| *o = !*o)>"Edit"</button>
            <button type="button" class="delete-account" on:click=delete>"Delete"</button>
        </span>
        <Show when=move || open.get()>
            <form class="edit-account-form" on:submit=save.clone()>
                <label>"Name" <input name="edit_name" bind:value=name/></label>
                <label>"Endpoint" <input name="edit_endpoint" bind:value=endpoint/></label>
                <label>"New API key" <input name="edit_api_key" type="password" autocomplete="off" bind:value=api_key placeholder="blank keeps the stored key"/></label>
                <button type="submit">"Save account"</button>
            </form>
        </Show>
    }
}

/// A target's recent probes, newest first, read when opened.
#[component]
fn ProbeHistory(target_id: String) -> impl IntoView {
    let probes = RwSignal::new(None::<Result<Vec<ProbeView>, String>>);
    let show = move |_| {
        if probes.get().is_some() {
            probes.set(None);
            return;
        }
        let url = routes::TARGET_PROBES.at([&target_id]);
        leptos::task::spawn_local(async move {
            probes.set(Some(client::get::<Vec<ProbeView>>(&url).await));
        });
    };
    view! {
        <button type="button" class="probe-history-toggle" on:click=show>"Probe history"</button>
        {move || probes.get().map(|loaded| match loaded {
            Err(message) => view! { <p class="error">{message}</p> }.into_any(),
            Ok(list) if list.is_empty() => view! { <p class="empty probe-history">"Never probed."</p> }.into_any(),
            Ok(list) => view! {
                <ol class="probe-history">
                    {list.into_iter().map(|probe| view! {
                        <li data-ok=probe.ok.to_string()>
                            <span class={if probe.ok { "badge ok" } else { "badge bad" }}>{if probe.ok { "ok" } else { "failed" }}</span>
                            {format!(" {} · {} ms", probe.probed_at, probe.latency_ms)}
                            {probe.error.map(|e| view! { <span class="reason">{e}</span> })}
                        </li>
                    }).collect_view()}
                </ol>
            }.into_any(),
        })}
    }
}

/// The escalation chain: tier 1 is the escalation role's target (Roles
/// above); further tiers are tried in order while every answer before was
/// not grounded.
#[component]
fn EscalationChain(
    data: ProvidersOverview,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let tier1 = data.roles.iter().find(|r| r.role == "escalation").and_then(|r| r.model.clone());
    let model_of = {
        let targets = data.targets.clone();
        move |id: &str| targets.iter().find(|t| t.id == id).map(|t| format!("{} ({})", t.model, t.state))
    };
    let candidates: Vec<TargetView> =
        data.targets.iter().filter(|t| t.capability == "generation").cloned().collect();
    let tiers = data.further_tiers.clone();
    let choice = RwSignal::new(String::new());
    let set = move |ids: Vec<String>| {
        leptos::task::spawn_local(async move {
            let body = TiersRequest { target_ids: ids };
            match client::send::<_, ProvidersOverview>("PUT", routes::ESCALATION_TIERS.url(), &body).await {
                Ok(_) => {
                    notice.set(Some((true, "The escalation chain is saved.".to_owned())));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    let add = {
        let tiers = tiers.clone();
        move |_| {
            let picked = choice.get();
            if picked.is_empty() {
                return;
            }
            let mut ids = tiers.clone();
            ids.push(picked);
            set(ids);
        }
    };
    view! {
        <div class="panel escalation-chain">
            <h2>"Escalation chain"</h2>
            <p class="hint">"When an answer is not grounded, the escalation role's model tries (tier 1), then each further tier in turn, until one grounds its answer; if none does, the question is refused."</p>
            <ol class="tiers">
                <li>{format!("Tier 1: {}", tier1.unwrap_or_else(|| "the escalation role is unbound".to_owned()))}</li>
                {tiers.iter().enumerate().map(|(i, id)| {
                    let rest: Vec<String> = tiers.iter().filter(|t| *t != id).cloned().collect();
                    view! {
                        <li class="tier" data-tier=(i + 2).to_string()>
                            {format!("Tier {}: {}", i + 2, model_of(id).unwrap_or_else(|| id.clone()))}
                            <button type="button" on:click=move |_| set(rest.clone())>"Remove"</button>
                        </li>
                    }
                }).collect_view()}
            </ol>
            <select name="tier_target" prop:value=move || choice.get() on:change=move |ev| choice.set(event_target_value(&ev))>
                <option value="">"(choose a generation model)"</option>
                {candidates.into_iter().map(|t| view! { <option value=t.id.clone()>{format!("{} ({})", t.model, t.state)}</option> }).collect_view()}
            </select>
            <button type="button" on:click=add>"Add tier"</button>
        </div>
    }
}
