//! The Sources screen: every source with its status, counts, freshness and
//! the live progress of its latest run (polled each second, no reloads);
//! creating upload, website and table sources; uploading files; enable, disable,
//! sync and delete (with confirmation); per-document errors.

use leptos::prelude::*;

use crate::client;
use crate::wire::{
    CreateSourceRequest, DocumentView, JobView, NoBody, SearchRequest, SearchResults, SourceConfigInput,
    SourceView, TableConfigInput, UploadReceipt, WebsiteConfigInput,
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
            sources.set(Some(client::get::<Vec<SourceView>>("/admin/sources/").await));
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
                {move || match sources.get() {
                    None => view! { <p class="loading">"Loading sources…"</p> }.into_any(),
                    Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                    Some(Ok(list)) if list.is_empty() => view! {
                        <p class="empty">"No sources yet. Add a website to crawl or an upload source above."</p>
                    }
                    .into_any(),
                    Some(Ok(list)) => view! {
                        <ul class="source-list">
                            <For each=move || list.clone() key=|s| (s.id.clone(), s.status.clone(), s.enabled, s.latest_job.as_ref().map(|j| (j.status.clone(), j.progress.done, j.progress.discovered, j.progress.embedded)), s.chunk_count) let:source>
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
    let notice = use_context::<RwSignal<Option<(bool, String)>>>();
    let reload_signal = use_context::<Reload>();
    let start = move |_| {
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = client::send::<_, JobView>("POST", "/admin/reindex", &NoBody {}).await;
            busy.set(false);
            let message = match result {
                Ok(_) => (true, "A full reindex is queued: every source is embedded again.".to_owned()),
                Err(message) => (false, message),
            };
            if let Some(notice) = notice {
                notice.set(Some(message));
            }
            if let Some(Reload(signal)) = reload_signal {
                signal.update(|n| *n = n.wrapping_add(1));
            }
        });
    };
    view! {
        <p class="actions">
            <button type="button" on:click=start disabled=move || busy.get()>"Reindex everything"</button>
            " Embeds every source again and re-stamps the corpus fingerprint."
        </p>
    }
}

fn say(ok: bool, text: impl Into<String>) {
    if let Some(notice) = use_context::<RwSignal<Option<(bool, String)>>>() {
        notice.set(Some((ok, text.into())));
    }
}

fn reload() {
    if let Some(Reload(signal)) = use_context::<Reload>() {
        signal.update(|n| *n = n.wrapping_add(1));
    }
}

#[component]
fn NewSourceForm() -> impl IntoView {
    let name = RwSignal::new(String::new());
    let kind = RwSignal::new("website".to_owned());
    let start_url = RwSignal::new(String::new());
    let discovery = RwSignal::new("sitemap".to_owned());
    let include = RwSignal::new(String::new());
    let exclude = RwSignal::new(String::new());
    let max_pages = RwSignal::new("500".to_owned());
    let max_depth = RwSignal::new("5".to_owned());
    let volatility = RwSignal::new("medium".to_owned());
    let database = RwSignal::new("data".to_owned());
    let table = RwSignal::new(String::new());
    let title = RwSignal::new(String::new());
    let text = RwSignal::new(String::new());
    let template = RwSignal::new(String::new());
    let url_template = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let notice = use_context::<RwSignal<Option<(bool, String)>>>();
    let reload_signal = use_context::<Reload>();

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let patterns = |raw: String| -> Vec<String> {
            raw.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect()
        };
        let optional = |raw: String| Some(raw.trim().to_owned()).filter(|v| !v.is_empty());
        let config = match kind.get().as_str() {
            "website" => Some(SourceConfigInput::Website(WebsiteConfigInput {
                start_url: start_url.get().trim().to_owned(),
                discovery: discovery.get(),
                include: Some(patterns(include.get())),
                exclude: Some(patterns(exclude.get())),
                max_pages: Some(max_pages.get().trim().parse::<u64>().unwrap_or(500)),
                max_depth: Some(max_depth.get().trim().parse::<u64>().unwrap_or(5)),
            })),
            "table" => Some(SourceConfigInput::Table(TableConfigInput {
                database: database.get().trim().to_owned(),
                table: table.get().trim().to_owned(),
                title: title.get().trim().to_owned(),
                text: patterns(text.get()),
                template: optional(template.get()),
                url: optional(url_template.get()),
            })),
            _ => None,
        };
        let body = CreateSourceRequest {
            name: name.get(),
            kind: kind.get(),
            volatility: config.is_some().then(|| volatility.get()),
            config,
        };
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = client::send::<_, SourceView>("POST", "/admin/sources/", &body).await;
            busy.set(false);
            let message = match result {
                Ok(created) => {
                    name.set(String::new());
                    start_url.set(String::new());
                    (true, format!("Created {:?}.", created.name))
                }
                Err(message) => (false, message),
            };
            if let Some(notice) = notice {
                notice.set(Some(message));
            }
            if let Some(Reload(signal)) = reload_signal {
                signal.update(|n| *n = n.wrapping_add(1));
            }
        });
    };

    view! {
        <form class="panel new-source" on:submit=submit>
            <h2>"Add a source"</h2>
            <label>"Name" <input name="name" required bind:value=name placeholder="Product docs"/></label>
            <label>
                "Kind"
                <select name="kind" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    <option value="website">"Website (sitemap or crawl)"</option>
                    <option value="upload">"Upload (Markdown, text, HTML, PDF)"</option>
                    <option value="table">"Table (rows of Lore's application database)"</option>
                    <option value="page_bank" disabled>"Page bank (announced, not yet available)"</option>
                </select>
            </label>
            <Show when=move || kind.get() == "table">
                <p class="warning" role="note">
                    "Every row this source indexes becomes answerable by every caller of /answer, the widget and the MCP answer tool, whatever their table permissions."
                </p>
                <label>"Database" <input name="database" required bind:value=database/></label>
                <label>"Table" <input name="table" required bind:value=table placeholder="faq"/></label>
                <label>"Title attribute" <input name="title" required bind:value=title placeholder="question"/></label>
                <label>"Text attributes" <input name="text" bind:value=text placeholder="answer, details"/></label>
                <label>"Or a text template" <input name="template" bind:value=template placeholder="{question} {answer}"/></label>
                <label>"Citation URL template" <input name="url_template" bind:value=url_template placeholder="https://example.com/faq/{id}"/></label>
            </Show>
            <Show when=move || kind.get() == "website">
                <label>"Start URL" <input name="start_url" type="url" bind:value=start_url placeholder="https://docs.example.com/"/></label>
                <label>
                    "Find pages by"
                    <select name="discovery" prop:value=move || discovery.get() on:change=move |ev| discovery.set(event_target_value(&ev))>
                        <option value="sitemap">"Sitemap (falls back to crawling)"</option>
                        <option value="crawl">"Following links"</option>
                    </select>
                </label>
                <label>"Include paths" <input name="include" bind:value=include placeholder="/docs/**"/></label>
                <label>"Exclude paths" <input name="exclude" bind:value=exclude placeholder="/blog/**, /changelog/*"/></label>
                <label>"Max pages" <input name="max_pages" type="number" min="1" bind:value=max_pages/></label>
                <label>"Max depth" <input name="max_depth" type="number" min="0" bind:value=max_depth/></label>
            </Show>
            <Show when=move || matches!(kind.get().as_str(), "website" | "table")>
                <label>
                    {move || if kind.get() == "table" { "Full re-sync" } else { "Re-sync" }}
                    <select name="volatility" prop:value=move || volatility.get() on:change=move |ev| volatility.set(event_target_value(&ev))>
                        <option value="high">"Hourly (changes often)"</option>
                        <option value="medium">"Daily"</option>
                        <option value="low">"Weekly"</option>
                        <option value="static">
                            {move || if kind.get() == "table" { "Never on its own (writes through Lore still count at once)" } else { "Never on its own" }}
                        </option>
                    </select>
                </label>
            </Show>
            <button type="submit" disabled=move || busy.get()>"Add source"</button>
        </form>
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
            found.set(Some(client::send::<_, SearchResults>("POST", "/admin/search", &body).await));
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
                let url = format!("/admin/sources/{id}/{what}");
                let result = match what {
                    "sync" => client::send::<_, JobView>("POST", &url, &NoBody {})
                        .await
                        .map(|_| "Sync queued.".to_owned()),
                    _ => client::send::<_, SourceView>("POST", &url, &NoBody {}).await.map(|s| {
                        format!("{:?} is {}.", s.name, if s.enabled { "enabled" } else { "disabled" })
                    }),
                };
                match result {
                    Ok(text) => say(true, text),
                    Err(text) => say(false, text),
                }
                reload();
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
                match client::delete(&format!("/admin/sources/{id}")).await {
                    Ok(()) => say(true, "Source deleted with its documents and chunks."),
                    Err(text) => say(false, text),
                }
                reload();
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
                match client::upload::<Vec<UploadReceipt>>(&format!("/admin/sources/{id}/files"), &input_id)
                    .await
                {
                    Ok(receipts) => {
                        say(true, format!("Received {} file(s); indexing started.", receipts.len()))
                    }
                    Err(text) => say(false, text),
                }
                reload();
            });
        }
    };
    let docs_id = id.clone();
    let documents = LocalResource::new(move || {
        let id = docs_id.clone();
        let wanted = show_docs.get();
        async move {
            if wanted {
                Some(client::get::<Vec<DocumentView>>(&format!("/admin/sources/{id}/documents")).await)
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
            {source.last_error.clone().map(|e| view! { <p class="error">{e}</p> })}
            {source.latest_job.clone().map(|job| view! { <JobProgress job/> })}
            <div class="actions">
                {is_upload.then(|| view! {
                    <input type="file" id=input_id.clone() multiple accept=".md,.markdown,.txt,.html,.htm,.pdf"/>
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
