//! Advanced tuning: embedding model, chunking, retrieval cutoff, weights and
//! top-k, semantic-cache gates, and each source's volatility.
//!
//! Every field starts blank: a blank field keeps its value, and its
//! placeholder shows the effective value and whether it is stored or the
//! default. A chunking change of an indexed corpus re-embeds everything, so
//! it asks for an acknowledgement first (without it nothing is saved). When
//! the embedding model differs from the corpus stamp, retrieval is failing
//! closed and a notice says so.

use leptos::prelude::*;

use super::judging::JudgingUnderWay;
use crate::client;
use crate::routes;
use crate::wire::{EffectiveValue, SourceView, TuningApplied, TuningChange, TuningView, VolatilityRequest};

const REINDEX_NEEDED: &str = "(reindex_acknowledgement_required)";

#[component]
pub fn Tuning() -> impl IntoView {
    let tuning = RwSignal::new(None::<Result<TuningView, String>>);
    let sources = RwSignal::new(None::<Result<Vec<SourceView>, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            tuning.set(Some(client::get::<TuningView>(routes::TUNING.url()).await));
            sources.set(Some(client::get::<Vec<SourceView>>(routes::SOURCES.url()).await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));
    view! {
        <section class="screen tuning">
            <h1>"Advanced tuning"</h1>
            <p class="lede">
                "Leave a field blank to keep its value. Placeholders show the value in effect and whether it was set here (stored) or is the default. Retrieval and cache values are saved as a new profile version, which the Prompt screen can restore."
            </p>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            <JudgingUnderWay/>
            {move || match tuning.get() {
                None => view! { <p class="loading">"Loading the tuning…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(view)) => view! { <TuningForm view notice refresh/> }.into_any(),
            }}
            {move || match sources.get() {
                Some(Ok(list)) => view! { <Volatility list notice refresh/> }.into_any(),
                _ => ().into_any(),
            }}
        </section>
    }
}

fn hint<T: std::fmt::Display>(value: &EffectiveValue<T>) -> String {
    format!("{} ({})", value.value, if value.stored { "stored" } else { "default" })
}

/// Parses a field: blank keeps (None), else the number or a message.
fn field<T: std::str::FromStr>(name: &str, raw: &str) -> Result<Option<T>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse().map(Some).map_err(|_| format!("{name} must be a number."))
}

#[component]
fn TuningForm(
    view: TuningView,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let chunk_size = RwSignal::new(String::new());
    let chunk_overlap = RwSignal::new(String::new());
    let top_k = RwSignal::new(String::new());
    let cutoff = RwSignal::new(String::new());
    let vector_weight = RwSignal::new(String::new());
    let text_weight = RwSignal::new(String::new());
    let rerank_candidates = RwSignal::new(String::new());
    let cache = RwSignal::new(String::new());
    let similarity = RwSignal::new(String::new());
    let max_age = RwSignal::new(String::new());
    // A change waiting for the reindex acknowledgement.
    let pending = RwSignal::new(None::<TuningChange>);

    let send = move |change: TuningChange| {
        leptos::task::spawn_local(async move {
            match client::send::<_, TuningApplied>("PUT", routes::TUNING.url(), &change).await {
                Ok(applied) => {
                    pending.set(None);
                    let mut said = vec!["Saved.".to_owned()];
                    if let Some(version) = applied.profile_version {
                        said.push(format!("Profile version {version} is now active."));
                    }
                    if applied.reindex_job.is_some() {
                        said.push("A full reindex started; follow it on the Sources screen.".to_owned());
                    }
                    notice.set(Some((true, said.join(" "))));
                    for signal in [
                        chunk_size,
                        chunk_overlap,
                        top_k,
                        cutoff,
                        vector_weight,
                        text_weight,
                        rerank_candidates,
                        cache,
                        similarity,
                        max_age,
                    ] {
                        signal.set(String::new());
                    }
                    refresh();
                }
                Err(message) if message.ends_with(REINDEX_NEEDED) => {
                    notice.set(None);
                    pending.set(Some(change));
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let change = (|| -> Result<TuningChange, String> {
            Ok(TuningChange {
                chunk_size: field("Chunk size", &chunk_size.get())?,
                chunk_overlap: field("Chunk overlap", &chunk_overlap.get())?,
                top_k: field("Top-k", &top_k.get())?,
                score_cutoff: field("The score cutoff", &cutoff.get())?,
                vector_weight: field("The vector weight", &vector_weight.get())?,
                text_weight: field("The text weight", &text_weight.get())?,
                rerank_candidates: field("Rerank candidates", &rerank_candidates.get())?,
                cache_enabled: match cache.get().as_str() {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                },
                cache_min_similarity: field("The minimum similarity", &similarity.get())?,
                cache_max_age_seconds: field("The maximum age", &max_age.get())?,
                acknowledge_reindex: false,
            })
        })();
        match change {
            Ok(change) if change == TuningChange::default() => {
                notice.set(Some((true, "Nothing to change: every field is blank.".to_owned())))
            }
            Ok(change) => send(change),
            Err(message) => notice.set(Some((false, message))),
        }
    };
    let confirm = move |_| {
        if let Some(mut change) = pending.get() {
            change.acknowledge_reindex = true;
            send(change);
        }
    };
    let cache_hint = format!(
        "{} ({})",
        if view.cache_enabled.value { "on" } else { "off" },
        if view.cache_enabled.stored { "stored" } else { "default" }
    );
    view! {
        {view.failing_closed.clone().map(|why| view! {
            <p class="flash error fail-closed" role="alert">
                "Retrieval is failing closed: " {why} " Run a full reindex (Sources → Reindex everything) to answer again."
            </p>
        })}
        <form class="panel tuning-form" on:submit=submit>
            <h2>"Embedding model"</h2>
            <p class="embedding" data-stored=view.embedding_model.stored.to_string()>
                <strong>{view.embedding_model.value.clone()}</strong>
                {if view.embedding_model.stored { " (a provider's target, bound to the embedding role)" } else { " (the on-CPU default)" }}
                ". Bind a provider's embedding target to the embedding role on the " <a href="/providers">"Providers"</a>
                " screen; until a full reindex, retrieval then fails closed."
            </p>
            <h2>"Chunking"</h2>
            <p class="note">"A change re-embeds every document."</p>
            <label>"Chunk size (tokens) " <input name="chunk_size" inputmode="numeric" bind:value=chunk_size placeholder=hint(&view.chunk_size)/></label>
            <label>"Overlap (tokens) " <input name="chunk_overlap" inputmode="numeric" bind:value=chunk_overlap placeholder=hint(&view.chunk_overlap)/></label>
            <h2>"Retrieval"</h2>
            <label>"Top-k " <input name="top_k" inputmode="numeric" bind:value=top_k placeholder=hint(&view.top_k)/></label>
            <label>"Score cutoff " <input name="score_cutoff" inputmode="decimal" bind:value=cutoff placeholder=hint(&view.score_cutoff)/></label>
            <label>"Vector weight " <input name="vector_weight" inputmode="decimal" bind:value=vector_weight placeholder=hint(&view.vector_weight)/></label>
            <label>"Text weight " <input name="text_weight" inputmode="decimal" bind:value=text_weight placeholder=hint(&view.text_weight)/></label>
            <label>"Rerank candidates " <input name="rerank_candidates" inputmode="numeric" bind:value=rerank_candidates placeholder=hint(&view.rerank_candidates)/></label>
            <p class="note">"While a rerank target is bound (Providers), it reorders this many of the best candidates past the cutoff before the top-k is taken."</p>
            <h2>"Semantic cache"</h2>
            <label>
                "Cache "
                <select name="cache_enabled" on:change=move |ev| cache.set(event_target_value(&ev)) prop:value=move || cache.get()>
                    <option value="">{format!("keep: {cache_hint}")}</option>
                    <option value="on">"on"</option>
                    <option value="off">"off"</option>
                </select>
            </label>
            <label>"Minimum similarity " <input name="cache_min_similarity" inputmode="decimal" bind:value=similarity placeholder=hint(&view.cache_min_similarity)/></label>
            <label>"Maximum age (seconds, for medium volatility) " <input name="cache_max_age_seconds" inputmode="numeric" bind:value=max_age placeholder=hint(&view.cache_max_age_seconds)/></label>
            <button type="submit">"Save"</button>
        </form>
        {move || pending.get().map(|_| view! {
            <div class="panel dialog reindex-dialog" role="alertdialog" aria-labelledby="reindex-title">
                <h2 id="reindex-title">"Re-embed everything?"</h2>
                <p>"The corpus is indexed with the current chunking. Changing it starts a full reindex: every document is chunked and embedded again, and answers use the old chunks until it finishes. Nothing is saved unless you confirm."</p>
                <button type="button" class="danger confirm-reindex" on:click=confirm>"Save and reindex"</button>
                <button type="button" class="secondary" on:click=move |_| pending.set(None)>"Cancel"</button>
            </div>
        })}
    }
}

#[component]
fn Volatility(
    list: Vec<SourceView>,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    if list.is_empty() {
        return ().into_any();
    }
    view! {
        <div class="panel volatility">
            <h2>"Source volatility"</h2>
            <p class="note">"How often a source changes: it paces re-syncs and how long cached answers citing it stay valid (high: a quarter of the cache's maximum age; low: 7 times; static: 30 times)."</p>
            <table>
                <tbody>
                    {list.into_iter().map(|source| {
                        let id = source.id.clone();
                        let change = move |ev: leptos::ev::Event| {
                            let id = id.clone();
                            let body = VolatilityRequest { volatility: event_target_value(&ev) };
                            leptos::task::spawn_local(async move {
                                let url = routes::SOURCE_VOLATILITY.at([&id]);
                                match client::send::<_, SourceView>("PUT", &url, &body).await {
                                    Ok(updated) => {
                                        notice.set(Some((true, format!("{} is now {} volatility.", updated.name, updated.volatility))));
                                        refresh();
                                    }
                                    Err(message) => notice.set(Some((false, message))),
                                }
                            });
                        };
                        view! {
                            <tr data-source=source.name.clone()>
                                <td>{source.name.clone()}</td>
                                <td>
                                    <select name="volatility" on:change=change prop:value=source.volatility.clone()>
                                        {["static", "low", "medium", "high"].map(|v| view! { <option value=v>{v}</option> }).collect_view()}
                                    </select>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
