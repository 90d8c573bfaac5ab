//! The Sources screen: every source with its status, counts, freshness and
//! the live progress of its latest run (polled each second, no reloads);
//! creating upload, website and table sources; uploading files; enable, disable,
//! sync and delete (with confirmation); who may read each source (its
//! audience); per-document errors.

use leptos::prelude::*;

use super::source_form::SourceForm;
use crate::client;
use crate::routes;
use crate::wire::{
    audience_in_words, AudienceRequest, CreateSourceRequest, DocumentView, JobView, NoBody, SearchRequest,
    SearchResults, SourceView, UploadReceipt, VectorIndexView,
};

/// Shared by the list and the form: bumping it reloads the list at once.
#[derive(Clone, Copy)]
struct Reload(RwSignal<u32>);

#[component]
pub fn Sources() -> impl IntoView {
    let reload = Reload(RwSignal::new(0));
    let sources = RwSignal::new(None::<Result<Vec<SourceView>, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    provide_context(reload);
    provide_context(notice);

    // Loads on hydration, on every reload and each second while the screen is open.
    Effect::new(move |_| {
        reload.0.track();
        leptos::task::spawn_local(async move {
            sources.set(Some(client::get::<Vec<SourceView>>(routes::SOURCES.url()).await));
        });
    });
    super::tick_each_second(reload.0);

    view! {
        <section class="screen sources">
            <h1>"Sources"</h1>
            <p class="lede">
                "Every enabled source is searched. Disabling a source hides its content and stops syncing it, and keeps what was indexed."
            </p>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            <NewSourceForm/>
            <CorpusSearch/>
            <div class="panel" aria-live="polite">
                <h2>"Your sources"</h2>
                <ReindexEverything/>
                <VectorIndexLine/>
                {move || match sources.get() {
                    None => view! { <p class="loading">"Loading sources…"</p> }.into_any(),
                    Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                    Some(Ok(list)) if list.is_empty() => view! {
                        <p class="empty">"No sources yet. Add a website to crawl or an upload source above."</p>
                    }
                    .into_any(),
                    Some(Ok(list)) => view! {
                        <ul class="source-list">
                            <For each=move || list.clone() key=|s| (s.id.clone(), s.status.clone(), s.enabled, s.audience.clone(), s.latest_job.as_ref().map(|j| (j.status.clone(), j.progress.done, j.progress.discovered, j.progress.embedded)), s.chunk_count) let:source>
                                <SourceCard source/>
                            </For>
                        </ul>
                    }
                    .into_any(),
                }}
            </div>
        </section>
    }
}

/// A full reindex: re-embeds every source and re-stamps the corpus
/// fingerprint (after the embedding model or the chunking changed).
#[component]
fn ReindexEverything() -> impl IntoView {
    let busy = RwSignal::new(false);
    let feedback = Feedback::here();
    let start = move |_| {
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = client::send::<_, JobView>("POST", routes::REINDEX.url(), &NoBody {}).await;
            busy.set(false);
            match result {
                Ok(_) => feedback.say(true, "A full reindex is queued: every source is embedded again."),
                Err(message) => feedback.say(false, message),
            }
            feedback.reload();
        });
    };
    view! {
        <p class="actions">
            <button type="button" on:click=start disabled=move || busy.get()>"Reindex everything"</button>
            " Embeds every source again and re-stamps the corpus fingerprint."
        </p>
    }
}

/// The vector index in a line, reloaded with the list: what it covers, and
/// a training anew under way (the previous index serves meanwhile).
#[component]
fn VectorIndexLine() -> impl IntoView {
    let reload = use_context::<Reload>();
    let index = RwSignal::new(None::<VectorIndexView>);
    Effect::new(move |_| {
        if let Some(Reload(signal)) = reload {
            signal.track();
        }
        leptos::task::spawn_local(async move {
            // The line is a courtesy: the list above shows any error.
            if let Ok(found) = client::get::<VectorIndexView>(routes::VECTOR_INDEX.url()).await {
                index.set(Some(found));
            }
        });
    });
    move || {
        index.get().map(|index| {
            let coverage = match (index.indexed, index.trained_on) {
                (None, _) => format!("Vector index: none yet; the {} chunks are each compared.", index.chunks),
                (Some(indexed), Some(trained)) => format!(
                    "Vector index: covers {indexed} of {} chunks; trained on {trained}.",
                    index.chunks
                ),
                (Some(indexed), None) => format!("Vector index: covers {indexed} of {} chunks.", index.chunks),
            };
            let training = index.training.map(|training| match training.failed {
                None => view! {
                    <p class="index-training" role="status">{format!(
                        "Training the vector index anew on {} chunks since {}; searches use the previous index until it is done.",
                        training.chunks, training.started_at
                    )}</p>
                }
                .into_any(),
                Some(why) => view! {
                    <p class="error">{format!("The last training of the vector index failed ({why}); the previous index serves, and it is tried again ten minutes later.")}</p>
                }
                .into_any(),
            });
            view! { <div class="vector-index"><p class="meta">{coverage}</p>{training}</div> }
        })
    }
}

/// The screen's notice line and list reload, taken from the context while
/// a component renders: a task it spawns runs outside the component's
/// reactive owner, where the context can no longer be found.
#[derive(Clone, Copy)]
struct Feedback {
    notice: Option<RwSignal<Option<(bool, String)>>>,
    reload: Option<Reload>,
}

impl Feedback {
    fn here() -> Self {
        Self { notice: use_context(), reload: use_context() }
    }

    fn say(self, ok: bool, text: impl Into<String>) {
        if let Some(notice) = self.notice {
            notice.set(Some((ok, text.into())));
        }
    }

    fn reload(self) {
        if let Some(Reload(signal)) = self.reload {
            signal.update(|n| *n = n.wrapping_add(1));
        }
    }
}

/// "Add a source": the one source form, sent to `POST /admin/sources/`.
#[component]
fn NewSourceForm() -> impl IntoView {
    let busy = RwSignal::new(false);
    let cleared = RwSignal::new(0_u32);
    let feedback = Feedback::here();
    let create = Callback::new(move |body: CreateSourceRequest| {
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = client::send::<_, SourceView>("POST", routes::SOURCES.url(), &body).await;
            busy.set(false);
            match result {
                Ok(created) => {
                    cleared.update(|n| *n = n.wrapping_add(1));
                    feedback.say(true, format!("Created {:?}.", created.name));
                }
                Err(message) => feedback.say(false, message),
            }
            feedback.reload();
        });
    });
    view! {
        <SourceForm class="panel new-source" heading="Add a source" submit_label="Add source" busy=busy on_submit=create cleared=cleared/>
    }
}

/// Hybrid search over the enabled sources, with each mode's raw score: a
/// quick check of what the index finds.
#[component]
fn CorpusSearch() -> impl IntoView {
    let query = RwSignal::new(String::new());
    let found = RwSignal::new(None::<Result<SearchResults, String>>);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = SearchRequest { query: query.get(), top_k: Some(5), raw: false };
        leptos::task::spawn_local(async move {
            found.set(Some(client::send::<_, SearchResults>("POST", routes::SEARCH.url(), &body).await));
        });
    };
    view! {
        <form class="panel corpus-search" on:submit=submit>
            <h2>"Search the corpus"</h2>
            <input name="query" type="search" bind:value=query placeholder="How do I restore a backup?"/>
            <button type="submit">"Search"</button>
            {move || found.get().map(|result| match result {
                Err(text) => view! { <p class="error">{text}</p> }.into_any(),
                Ok(results) if results.results.is_empty() => view! {
                    <p class="empty">{format!("Nothing passed the score cutoff ({} candidates considered).", results.candidates)}</p>
                }
                .into_any(),
                Ok(results) => view! {
                    <ol class="hits">
                        {results.results.into_iter().map(|hit| view! {
                            <li class="hit">
                                <strong>{hit.title.clone()}</strong>
                                {hit.heading.clone().map(|h| view! { <span class="meta">{format!(" › {h}")}</span> })}
                                <span class="meta">{format!(
                                    "  score {:.3} (vector {:.3}, text {})",
                                    hit.score,
                                    hit.vector_score,
                                    hit.text_score.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into())
                                )}</span>
                                <p>{hit.text.chars().take(240).collect::<String>()}</p>
                            </li>
                        }).collect_view()}
                    </ol>
                }
                .into_any(),
            })}
        </form>
    }
    .into_any()
}

fn status_label(source: &SourceView) -> String {
    if !source.enabled {
        return "disabled".into();
    }
    source.status.clone()
}

fn freshness(source: &SourceView) -> String {
    match (&source.last_synced_at, source.fresh) {
        (Some(at), Some(true)) => format!("Fresh · synced {at}"),
        (Some(at), _) => format!("Stale · synced {at}"),
        (None, _) => "Never synced".into(),
    }
}

#[component]
fn SourceCard(source: SourceView) -> impl IntoView {
    let feedback = Feedback::here();
    let id = source.id.clone();
    let confirming = RwSignal::new(false);
    let show_docs = RwSignal::new(false);
    let enabled = source.enabled;
    let is_upload = source.kind == "upload";
    let input_id = format!("files-{}", source.id);
    let start_url = source.config.get("start_url").and_then(|v| v.as_str()).map(str::to_owned);

    let act = {
        let id = id.clone();
        move |what: &'static str| {
            let id = id.clone();
            leptos::task::spawn_local(async move {
                let url = match what {
                    "sync" => routes::SOURCE_SYNC,
                    "enable" => routes::SOURCE_ENABLE,
                    _ => routes::SOURCE_DISABLE,
                }
                .at([&id]);
                let result = match what {
                    "sync" => client::send::<_, JobView>("POST", &url, &NoBody {})
                        .await
                        .map(|_| "Sync queued.".to_owned()),
                    _ => client::send::<_, SourceView>("POST", &url, &NoBody {}).await.map(|s| {
                        format!("{:?} is {}.", s.name, if s.enabled { "enabled" } else { "disabled" })
                    }),
                };
                match result {
                    Ok(text) => feedback.say(true, text),
                    Err(text) => feedback.say(false, text),
                }
                feedback.reload();
            });
        }
    };
    let act_toggle = act.clone();
    let act_sync = act.clone();
    let delete = {
        let id = id.clone();
        move |_| {
            let id = id.clone();
            leptos::task::spawn_local(async move {
                match client::delete(&routes::SOURCE.at([&id])).await {
                    Ok(()) => feedback.say(true, "Source deleted with its documents and chunks."),
                    Err(text) => feedback.say(false, text),
                }
                feedback.reload();
            });
        }
    };
    let upload = {
        let id = id.clone();
        let input_id = input_id.clone();
        move |_| {
            let id = id.clone();
            let input_id = input_id.clone();
            leptos::task::spawn_local(async move {
                match client::upload::<Vec<UploadReceipt>>(&routes::SOURCE_FILES.at([&id]), &input_id).await {
                    Ok(receipts) => {
                        feedback.say(true, format!("Received {} file(s); indexing started.", receipts.len()))
                    }
                    Err(text) => feedback.say(false, text),
                }
                feedback.reload();
            });
        }
    };
    let audience_draft = RwSignal::new(source.audience.clone());
    let set_audience = {
        let id = id.clone();
        move |_| {
            let id = id.clone();
            let body = AudienceRequest { audience: audience_draft.get_untracked() };
            leptos::task::spawn_local(async move {
                match client::send::<_, SourceView>("PUT", &routes::SOURCE_AUDIENCE.at([&id]), &body).await {
                    Ok(s) => feedback
                        .say(true, format!("{:?} now answers {}.", s.name, audience_in_words(&s.audience))),
                    Err(text) => feedback.say(false, text),
                }
                feedback.reload();
            });
        }
    };
    let publishes_table = source.kind == "table" && source.audience == "everyone";
    let docs_id = id.clone();
    let documents = LocalResource::new(move || {
        let id = docs_id.clone();
        let wanted = show_docs.get();
        async move {
            if wanted {
                Some(client::get::<Vec<DocumentView>>(&routes::SOURCE_DOCUMENTS.at([&id])).await)
            } else {
                None
            }
        }
    });

    view! {
        <li class="source" data-source=source.name.clone() data-status=status_label(&source)>
            <div class="source-head">
                <strong class="source-name">{source.name.clone()}</strong>
                <span class="kind">{source.kind.clone()}</span>
                <span class=format!("status {}", status_label(&source))>{status_label(&source)}</span>
            </div>
            {start_url.map(|url| view! { <p class="meta">{url}</p> })}
            <p class="meta counts">
                <span data-documents=source.document_count>{format!("{} documents", source.document_count)}</span>
                " · "
                <span data-chunks=source.chunk_count>{format!("{} chunks", source.chunk_count)}</span>
                " · "
                <span class="freshness">{freshness(&source)}</span>
            </p>
            <p class="meta audience">
                "Answers " <span class="audience-words" data-audience=source.audience.clone()>{audience_in_words(&source.audience)}</span> ". "
                <label>"Who may read "
                    <input class="audience-input" bind:value=audience_draft placeholder="everyone, table, or roles: support,staff"/>
                </label>
                <button class="audience-set" on:click=set_audience>"Set"</button>
            </p>
            {publishes_table.then(|| view! {
                <p class="warning audience-warning">"This table's indexed attributes are published to every caller, the widget and keys without a user included, whatever the table's permissions."</p>
            })}
            {source.sync_summary.clone().map(|s| view! { <p class="sync-summary">{s}</p> })}
            {source.last_error.clone().map(|e| view! { <p class="error">{e}</p> })}
            {source.latest_job.clone().map(|job| view! { <JobProgress job/> })}
            <div class="actions">
                {is_upload.then(|| view! {
                    <input type="file" id=input_id.clone() multiple accept=".md,.markdown,.mdx,.rst,.adoc,.asciidoc,.txt,.html,.htm,.pdf"/>
                    <button class="upload" on:click=upload.clone()>"Upload"</button>
                })}
                <button class="toggle" on:click=move |_| act_toggle(if enabled { "disable" } else { "enable" })>
                    {if enabled { "Disable" } else { "Enable" }}
                </button>
                <button class="sync" disabled=!enabled on:click=move |_| act_sync("sync")>"Sync now"</button>
                <button class="docs" on:click=move |_| show_docs.update(|v| *v = !*v)>"Documents"</button>
                <Show
                    when=move || confirming.get()
                    fallback=move || view! { <button class="delete" on:click=move |_| confirming.set(true)>"Delete"</button> }
                >
                    <span class="confirm">
                        "Delete this source, its documents and chunks? "
                        <button class="delete-confirm danger" on:click=delete.clone()>"Delete for good"</button>
                        <button class="delete-cancel" on:click=move |_| confirming.set(false)>"Cancel"</button>
                    </span>
                </Show>
            </div>
            {move || documents.get().flatten().map(|docs| match docs {
                Ok(docs) => view! { <DocumentList docs/> }.into_any(),
                Err(text) => view! { <p class="error">{text}</p> }.into_any(),
            })}
        </li>
    }
    .into_any()
}

#[component]
fn JobProgress(job: JobView) -> impl IntoView {
    let p = job.progress.clone();
    let total = p.discovered.max(p.done).max(1);
    let percent = (p.done * 100 / total).min(100);
    let running = matches!(job.status.as_str(), "queued" | "running");
    view! {
        <div class="job" data-job-status=job.status.clone() data-done=p.done data-discovered=p.discovered>
            <div class="job-line">
                <span class="job-status">{format!("Latest run: {}", job.status)}</span>
                {(job.attempts > 1).then(|| view! { <span class="resumed">" (resumed after a restart)"</span> })}
            </div>
            <progress max=total value=p.done class:running=running>{format!("{percent}%")}</progress>
            <p class="meta">
                {format!(
                    "{} of {} documents · fetched {} · embedded {} chunks · unchanged {} · failed {} · duplicates {} · skipped {} · removed {}",
                    p.done, p.discovered, p.fetched, p.embedded, p.unchanged, p.failed, p.duplicates, p.skipped, p.removed
                )}
            </p>
            {job.message.clone().filter(|_| !running).map(|m| view! { <p class="meta">{m}</p> })}
            {(!job.errors.is_empty()).then(|| view! {
                <details class="job-errors">
                    <summary>{format!("{} document error(s)", job.errors.len())}</summary>
                    <ul>{job.errors.iter().map(|e| view! { <li><code>{e.uri.clone()}</code>": "{e.error.clone()}</li> }).collect_view()}</ul>
                </details>
            })}
        </div>
    }
    .into_any()
}

#[component]
fn DocumentList(docs: Vec<DocumentView>) -> impl IntoView {
    if docs.is_empty() {
        return view! { <p class="empty">"No documents yet."</p> }.into_any();
    }
    view! {
        <table class="documents">
            <thead><tr><th>"Document"</th><th>"Status"</th><th>"Chunks"</th><th>"Error"</th></tr></thead>
            <tbody>
                {docs.into_iter().map(|d| view! {
                    <tr class=d.status.clone()>
                        <td>{match d.url.clone() { Some(url) => view! { <a href=url rel="external">{d.title.clone()}</a> }.into_any(), None => view! { <span>{d.title.clone()}</span> }.into_any() }}</td>
                        <td>{d.status.clone()}</td>
                        <td>{d.chunk_count}</td>
                        <td>{d.error.clone().unwrap_or_default()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
