//! The form that creates a source, on the Sources screen and in the setup
//! wizard alike. It is drawn from the kinds the server lists
//! (`GET /admin/sources/kinds`), each with its fields, so a new kind of
//! source shows up here with no change to the console.

use std::collections::HashMap;

use leptos::prelude::*;

use crate::client;
use crate::routes;
use crate::wire::{CreateSourceRequest, FieldInput, FieldView, SourceKindView};

/// The entries of the chosen kind's fields, by key.
type Entries = RwSignal<HashMap<String, String>>;

/// A form for a new source. `on_submit` receives the request; the caller
/// sends it and, when it succeeds, bumps `cleared` to empty the form (left
/// as it was on a refusal, to correct and send again).
#[component]
pub fn SourceForm(
    /// The form element's class.
    class: &'static str,
    /// What the submit button says.
    submit_label: &'static str,
    busy: RwSignal<bool>,
    on_submit: Callback<CreateSourceRequest>,
    #[prop(optional)] heading: Option<&'static str>,
    #[prop(optional)] hint: Option<&'static str>,
    #[prop(optional)] cleared: Option<RwSignal<u32>>,
) -> impl IntoView {
    let kinds = RwSignal::new(None::<Result<Vec<SourceKindView>, String>>);
    let name = RwSignal::new(String::new());
    let kind = RwSignal::new(String::new());
    let entries: Entries = RwSignal::new(HashMap::new());
    let volatility = RwSignal::new(String::new());
    let audience = RwSignal::new(String::new());
    let chosen = move || kinds.with(|all| find(all, &kind.get()));
    let choose = move |key: String| {
        let found = kinds.with_untracked(|all| find(all, &key));
        if let Some(found) = found {
            entries.set(found.fields.iter().map(|f| (f.key.clone(), initial(f))).collect());
            volatility.set(found.default_volatility.clone());
        }
        kind.set(key);
    };

    // Loaded once, in the browser.
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            let loaded = client::get::<Vec<SourceKindView>>(routes::SOURCE_KINDS.url()).await;
            let first =
                loaded.as_ref().ok().and_then(|all| all.iter().find(|k| k.available)).map(|k| k.key.clone());
            kinds.set(Some(loaded));
            if let Some(first) = first {
                choose(first);
            }
        });
    });
    if let Some(cleared) = cleared {
        Effect::new(move |previous: Option<u32>| {
            let now = cleared.get();
            if previous.is_some_and(|previous| previous != now) {
                name.set(String::new());
                audience.set(String::new());
                choose(kind.get_untracked());
            }
            now
        });
    }

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(found) = chosen() else { return };
        let config = entries.with(|entered| {
            let map: serde_json::Map<String, serde_json::Value> = found
                .fields
                .iter()
                .filter_map(|field| {
                    let value =
                        field.value(entered.get(&field.key).map(String::as_str).unwrap_or_default())?;
                    Some((field.key.clone(), value))
                })
                .collect();
            (!found.fields.is_empty()).then_some(serde_json::Value::Object(map))
        });
        on_submit.run(CreateSourceRequest {
            name: name.get().trim().to_owned(),
            kind: found.key.clone(),
            config,
            volatility: found.resyncs.then(|| volatility.get()),
            audience: Some(audience.get().trim().to_owned()).filter(|a| !a.is_empty()),
        });
    };

    view! {
        <form class=class on:submit=submit>
            {heading.map(|heading| view! { <h2>{heading}</h2> })}
            {hint.map(|hint| view! { <p class="hint">{hint}</p> })}
            {move || match kinds.get() {
                None => view! { <p class="loading">"Loading the kinds of source…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(all)) => view! {
                    <label>"Name" <input name="name" required bind:value=name placeholder="Product docs"/></label>
                    <label>
                        "Kind"
                        <select name="kind" prop:value=move || kind.get() on:change=move |ev| choose(event_target_value(&ev))>
                            {all.into_iter().map(|k| view! {
                                <option value=k.key.clone() disabled=!k.available>{k.label}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    {move || chosen().map(|found| kind_fields(found, entries, volatility))}
                    <label>
                        "Who may read it "
                        <input name="audience" bind:value=audience
                            placeholder="everyone (a table source: its table's readers), or roles: support,staff"/>
                    </label>
                    <div class="form-actions"><button type="submit" disabled=move || busy.get()>{submit_label}</button></div>
                }
                .into_any(),
            }}
        </form>
    }
}

/// The chosen kind's note, fields (the advanced ones folded away) and, for
/// a kind that re-syncs, how often.
fn kind_fields(found: SourceKindView, entries: Entries, volatility: RwSignal<String>) -> impl IntoView {
    let (advanced, plain): (Vec<FieldView>, Vec<FieldView>) =
        found.fields.into_iter().partition(|f| f.advanced);
    let more = (!advanced.is_empty()).then(|| {
        view! {
            <details class="more-options">
                <summary>"More options"</summary>
                {advanced.into_iter().map(|f| field(f, entries)).collect_view()}
            </details>
        }
    });
    let resync = found.resyncs.then(|| {
        view! {
            <label>
                {found.resync_label}
                <select name="volatility" prop:value=move || volatility.get() on:change=move |ev| volatility.set(event_target_value(&ev))>
                    <option value="high">"Hourly (changes often)"</option>
                    <option value="medium">"Daily"</option>
                    <option value="low">"Weekly"</option>
                    <option value="static">{found.never_label}</option>
                </select>
            </label>
        }
    });
    view! {
        {found.note.map(|note| view! { <p class="warning" role="note">{note}</p> })}
        {plain.into_iter().map(|f| field(f, entries)).collect_view()}
        {more}
        {resync}
    }
}

/// One field, its entry kept in `entries` under its key. (Folded away, a
/// required field is not marked required: the browser could not show it
/// when it refused the form; the kind's check says what is missing.)
fn field(field: FieldView, entries: Entries) -> impl IntoView {
    let key = field.key.clone();
    let current = {
        let key = key.clone();
        move || entries.with(|entered| entered.get(&key).cloned().unwrap_or_default())
    };
    let set = move |value: String| {
        entries.update(|entered| {
            entered.insert(key.clone(), value);
        })
    };
    let input = match field.input {
        FieldInput::Choice => view! {
            <select name=field.key.clone() prop:value=current on:change=move |ev| set(event_target_value(&ev))>
                {field.choices.into_iter().map(|c| view! { <option value=c.value>{c.label}</option> }).collect_view()}
            </select>
        }
        .into_any(),
        input => {
            let kind = match input {
                FieldInput::Url => "url",
                FieldInput::Number => "number",
                _ => "text",
            };
            view! {
                <input name=field.key.clone() type=kind required=field.required && !field.advanced placeholder=field.placeholder
                    min=field.min.map(|min| min.to_string())
                    prop:value=current on:input=move |ev| set(event_target_value(&ev))/>
            }
            .into_any()
        }
    };
    view! { <label>{field.label} {input}</label> }
}

/// The loaded kind called `key`.
fn find(kinds: &Option<Result<Vec<SourceKindView>, String>>, key: &str) -> Option<SourceKindView> {
    kinds.as_ref()?.as_ref().ok()?.iter().find(|k| k.key == key).cloned()
}

/// What a field starts with: its default, or a choice's first value.
fn initial(field: &FieldView) -> String {
    if field.default.is_empty() {
        field.choices.first().map(|c| c.value.clone()).unwrap_or_default()
    } else {
        field.default.clone()
    }
}
