//! The Playground: ask through the real pipeline, in three modes.
//!
//! - **Answer**: the same pipeline as `POST /answer`: the answer, its
//!   citations, cache hit or miss, the full trace with the cost funnel.
//! - **Profile retrieval**: what the active profile version retrieves, with
//!   its resolved scope (the enabled sources) and settings.
//! - **Corpus diagnostic**: the whole corpus (disabled sources too) searched
//!   directly, no cutoff, with each mode's raw score.
//!
//! "Answer as" runs the first two modes as a role's users, or as every
//! caller (the widget's visitors, keys without a user), would: the sources
//! they may not read are not searched, the caches and pins they may not see
//! do not serve.
//!
//! Under an answer, the admin can save the question as a golden question
//! (with the facts a right answer holds) or pin the answer, edited if need
//! be, with its citations. `?q=` fills the question in (the Dashboard's
//! "Pin an answer" on a content gap links here with it).

use leptos::prelude::*;

use crate::client;
use crate::routes;
use crate::wire::{
    AnswerResponse, ErrorBody, FeedbackRequest, FeedbackResponse, GoldenRequest, GoldenView, PinRequest,
    PinView, PlaygroundAnswerRequest, ProfileRetrievalView, RelatedView, RetrievalRequest, RoleRow,
    SearchRequest, SearchResults, StageView, SupportView, MAX_COMMENT_CHARS,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Answer,
    Profile,
    Corpus,
}

#[derive(Clone)]
enum Outcome {
    Answer(Box<AnswerResponse>),
    Profile(ProfileRetrievalView),
    Corpus(SearchResults),
}

#[component]
pub fn Playground() -> impl IntoView {
    let mode = RwSignal::new(Mode::Answer);
    let query = leptos_router::hooks::use_query_map();
    let question = RwSignal::new(query.get_untracked().get("q").unwrap_or_default());
    // The question the shown answer answers (the box may have changed since).
    let answered = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<Outcome, String>>);
    // Bumped by every question and every change of mode: a reply that comes
    // back after either is stale and is not shown.
    let asked = RwSignal::new(0_u64);
    // The answer run's stages as they end, shown while it works.
    let live = RwSignal::new(Vec::<StageView>::new());
    // Who to answer as: `admin`, `everyone` or `role:NAME`.
    let answer_as = RwSignal::new("admin".to_owned());
    let roles = RwSignal::new(Vec::<String>::new());
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            let listed = client::send::<_, Vec<RoleRow>>(
                "POST",
                "/operation",
                &serde_json::json!({"operation": "list_roles"}),
            )
            .await;
            roles.set(listed.map(|rows| rows.into_iter().map(|r| r.role).collect()).unwrap_or_default());
        });
    });

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = question.get();
        let text_for_curation = text.clone();
        let chosen = mode.get();
        busy.set(true);
        outcome.set(None);
        asked.update(|n| *n += 1);
        live.set(Vec::new());
        let this = asked.get_untracked();
        let as_who = Some(answer_as.get_untracked()).filter(|who| who != "admin");
        leptos::task::spawn_local(async move {
            let result = match chosen {
                Mode::Answer => stream_answer(&text, as_who, move |stage| {
                    if asked.get_untracked() == this {
                        live.update(|stages| stages.push(stage));
                    }
                })
                .await
                .map(|answer| Outcome::Answer(Box::new(answer))),
                Mode::Profile => client::send::<_, ProfileRetrievalView>(
                    "POST",
                    routes::PLAYGROUND_RETRIEVAL.url(),
                    &RetrievalRequest { query: text, answer_as: as_who },
                )
                .await
                .map(Outcome::Profile),
                Mode::Corpus => client::send::<_, SearchResults>(
                    "POST",
                    routes::SEARCH.url(),
                    &SearchRequest { query: text, top_k: Some(10), raw: true },
                )
                .await
                .map(Outcome::Corpus),
            };
            busy.set(false);
            if asked.get_untracked() == this {
                answered.set(text_for_curation);
                outcome.set(Some(result));
            }
        });
    };

    let tab = move |which: Mode, label: &'static str| {
        view! {
            <label class="tab">
                <input type="radio" name="mode" checked=move || mode.get() == which on:change=move |_| { mode.set(which); outcome.set(None); asked.update(|n| *n += 1); }/>
                {label}
            </label>
        }
    };

    view! {
        <section class="screen playground">
            <h1>"Playground"</h1>
            <p class="lede">"Ask as your users do. Answer mode runs the real pipeline (and is recorded as a Playground run); the other modes show what retrieval finds."</p>
            <form class="panel ask" on:submit=submit>
                <fieldset class="modes">
                    <legend>"Mode"</legend>
                    {tab(Mode::Answer, "Answer")}
                    {tab(Mode::Profile, "Profile retrieval")}
                    {tab(Mode::Corpus, "Corpus diagnostic")}
                </fieldset>
                <label class="answer-as">"Answer as "
                    <select name="answer_as" prop:value=move || answer_as.get() on:change=move |ev| answer_as.set(event_target_value(&ev))>
                        <option value="admin">"an admin (every source)"</option>
                        <option value="everyone">"everyone (the widget, keys without a user)"</option>
                        {move || roles.get().into_iter().map(|role| {
                            let value = format!("role:{role}");
                            view! { <option value=value>{format!("role {role}")}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <textarea name="question" rows="2" required bind:value=question placeholder="How do I restore a snapshot?"></textarea>
                <button type="submit" disabled=move || busy.get()>{move || if busy.get() { "Asking…" } else { "Ask" }}</button>
            </form>
            {move || (busy.get() && !live.get().is_empty()).then(|| view! {
                <div class="panel live" aria-live="polite">
                    <h2>"Working…"</h2>
                    <ol class="live-stages">
                        {live.get().into_iter().map(|s| view! {
                            <li data-stage=s.stage.clone() data-decision=s.decision.clone()>
                                {format!("{} · {} · {:.0} ms", s.stage.replace('_', " "), s.decision, s.duration_ms)}
                            </li>
                        }).collect_view()}
                    </ol>
                </div>
            })}
            {move || outcome.get().map(|result| match result {
                Err(message) => view! { <p class="flash error" role="alert">{message}</p> }.into_any(),
                Ok(Outcome::Answer(answer)) => view! {
                    <AnswerPanel answer=(*answer).clone()/>
                    <Curate question=answered.get_untracked() answer=*answer/>
                }.into_any(),
                Ok(Outcome::Profile(view)) => view! { <ProfilePanel view/> }.into_any(),
                Ok(Outcome::Corpus(results)) => view! { <Hits results title="Corpus diagnostic: every source, no cutoff" empty="Nothing in the corpus matches"/> }.into_any(),
            })}
        </section>
    }
}

/// Asks through the streaming answer route, calling `on_stage` as each stage
/// of the run ends; the final object, or the error the stream ended with.
async fn stream_answer(
    question: &str,
    answer_as: Option<String>,
    mut on_stage: impl FnMut(StageView),
) -> Result<AnswerResponse, String> {
    let mut finished = None;
    client::stream(
        routes::PLAYGROUND_ANSWER.url(),
        &PlaygroundAnswerRequest { question: question.to_owned(), stream: Some(true), answer_as },
        |event, data| match event {
            "stage" => {
                if let Ok(stage) = serde_json::from_str::<StageView>(data) {
                    on_stage(stage);
                }
            }
            "answer" => {
                finished = Some(
                    serde_json::from_str::<AnswerResponse>(data)
                        .map_err(|err| format!("Lore answered nonsense: {err}")),
                );
            }
            "error" => {
                finished = Some(Err(serde_json::from_str::<ErrorBody>(data)
                    .map(|body| body.error.shown())
                    .unwrap_or_else(|_| "The answer failed.".to_owned())));
            }
            _ => {}
        },
    )
    .await?;
    finished.unwrap_or_else(|| Err("The answer was cut off; please ask again.".to_owned()))
}

#[component]
pub(crate) fn AnswerPanel(answer: AnswerResponse) -> impl IntoView {
    let cache = match (answer.cache.status.as_str(), answer.cache.kind.as_deref(), answer.cache.similarity) {
        ("hit", Some(kind), Some(s)) => format!("cache hit ({kind}, similarity {s:.3})"),
        ("miss", _, Some(s)) => format!("cache miss (nearest {s:.3})"),
        (status, _, _) => format!("cache {status}"),
    };
    let usage = &answer.trace.usage;
    let usage_line = format!(
        "{} · {} input + {} output tokens · ${:.6} · profile version {} · trace {}",
        answer.trace.model.clone().unwrap_or_else(|| "no model call".into()),
        usage.input_tokens,
        usage.output_tokens,
        usage.estimated_cost_usd,
        answer.profile_version,
        answer.trace.id
    );
    view! {
        <div class="panel answer" data-refused=answer.refused.to_string() data-pinned=answer.pinned.to_string() data-cache=answer.cache.status.clone()>
            <h2>{if answer.refused { "Refused" } else if answer.pinned { "Pinned answer" } else { "Answer" }}</h2>
            <p class="answer-text">{answer.answer.clone()}</p>
            <p class="meta">{cache}" · "{usage_line}</p>
            {(!answer.statements.is_empty()).then(|| view! {
                <h3>"Statements and what supports them"</h3>
                <ol class="statements">
                    {answer.statements.iter().map(|s| view! {
                        <li class="statement" data-citation=s.citation>
                            <span class="statement-text">{s.text.clone()}</span>
                            <span class="meta">{format!(" [{}]", s.citation)}</span>
                            <Quote span=s.support.clone()/>
                        </li>
                    }).collect_view()}
                </ol>
            }.into_any())}
            {(!answer.related.is_empty()).then(|| view! { <Related related=answer.related.clone()/> }.into_any())}
            {answer.feedback.clone().and_then(|link| Some((link.href?, link.trace_id))).map(|(href, trace_id)| view! { <Rate href trace_id/> }.into_any())}
            {(!answer.citations.is_empty()).then(|| view! {
                <h3>"Citations"</h3>
                <ol class="citations">
                    {answer.citations.iter().map(|c| {
                        let label = format!("[{}] {}", c.index, c.title);
                        view! {
                            <li class="citation" data-index=c.index>
                                {match c.url.clone() {
                                    Some(url) => view! { <a href=url target="_blank" rel="noopener">{label}</a> }.into_any(),
                                    None => view! { <strong>{label}</strong> }.into_any(),
                                }}
                                <span class="meta">{format!(" score {:.3}", c.score)}</span>
                                <p>{c.snippet.clone()}</p>
                            </li>
                        }
                    }).collect_view()}
                </ol>
            })}
            <h3>"Trace"</h3>
            <table class="trace">
                <thead><tr><th>"Stage"</th><th>"Decision"</th><th>"Reason"</th><th>"ms"</th><th>"Cost"</th></tr></thead>
                <tbody>
                    {answer.trace.stages.iter().map(|s| view! {
                        <tr class="stage" data-stage=s.stage.clone() data-decision=s.decision.clone()>
                            <td>{s.stage.clone()}</td>
                            <td>{s.decision.clone()}</td>
                            <td class="reason">
                                {s.reason.clone()}
                                {s.detail.clone().filter(|d| *d != s.reason).map(|detail| view! {
                                    <details class="stage-detail">
                                        <summary>"Full detail"</summary>
                                        <pre>{detail}</pre>
                                    </details>
                                })}
                            </td>
                            <td>{format!("{:.1}", s.duration_ms)}</td>
                            <td>{s.cost_usd.map(|c| format!("${c:.6}")).unwrap_or_default()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            {(!answer.trace.retrieval.is_empty()).then(|| view! {
                <h3>"Retrieved passages"</h3>
                <ol class="passages">
                    {answer.trace.retrieval.iter().map(|p| view! {
                        <li>{format!(
                            "[{}] {} · score {:.3} (vector {:.3}, text {})",
                            p.index,
                            p.title,
                            p.score,
                            p.vector_score,
                            p.text_score.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into())
                        )}</li>
                    }).collect_view()}
                </ol>
            })}
        </div>
    }
}

/// A span of a passage, quoted, its marked words in `<mark>`.
#[component]
pub(crate) fn Quote(span: SupportView) -> impl IntoView {
    let chars: Vec<char> = span.quote.chars().collect();
    let mut parts: Vec<(String, bool)> = Vec::new();
    let mut at = 0;
    for [start, end] in span.marks {
        if start < at || end > chars.len() || start > end {
            continue;
        }
        parts.push((chars[at..start].iter().collect(), false));
        parts.push((chars[start..end].iter().collect(), true));
        at = end;
    }
    parts.push((chars[at..].iter().collect(), false));
    view! {
        <blockquote class="support">
            {parts.into_iter().map(|(text, marked)| if marked {
                view! { <mark>{text}</mark> }.into_any()
            } else {
                text.into_any()
            }).collect_view()}
        </blockquote>
    }
}

/// A refusal's closest passages: maybe related, never an answer.
#[component]
pub(crate) fn Related(related: Vec<RelatedView>) -> impl IntoView {
    view! {
        <div class="related">
            <h3>"May be related"</h3>
            <p class="meta">"The documentation does not answer this question; these passages came closest."</p>
            <ul>
                {related.into_iter().map(|r| {
                    let label = r.title.clone();
                    view! {
                        <li class="related-passage">
                            {match r.url.clone() {
                                Some(url) => view! { <a href=url target="_blank" rel="noopener">{label}</a> }.into_any(),
                                None => view! { <strong>{label}</strong> }.into_any(),
                            }}
                            <Quote span=r.sentence/>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </div>
    }
}

/// The thumbs pair under an answer: rates it at `href` (a second rating
/// replaces the first); after a thumbs-down, an optional comment.
#[component]
pub(crate) fn Rate(href: String, trace_id: String) -> impl IntoView {
    let chosen = RwSignal::new(None::<bool>);
    let comment = RwSignal::new(String::new());
    let said = RwSignal::new(None::<(bool, String)>);
    let send = {
        let (href, trace_id) = (href.clone(), trace_id.clone());
        move |helpful: bool, text: Option<String>| {
            let body = FeedbackRequest { trace_id: trace_id.clone(), helpful, comment: text };
            let href = href.clone();
            chosen.set(Some(helpful));
            leptos::task::spawn_local(async move {
                said.set(Some(match client::send::<_, FeedbackResponse>("POST", &href, &body).await {
                    Ok(_) => (true, "Thank you: the rating is counted on the Dashboard.".into()),
                    Err(message) => (false, message),
                }));
            });
        }
    };
    let up = send.clone();
    let down = send.clone();
    let with_comment = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = comment.get().trim().to_owned();
        if !text.is_empty() {
            send(false, Some(text));
        }
    };
    view! {
        <div class="rate" role="group" aria-label="Was this answer helpful?">
            "Helpful? "
            <button type="button" class="secondary rate-up" aria-pressed=move || (chosen.get() == Some(true)).to_string() on:click=move |_| up(true, None)>"👍 Yes"</button>
            " "
            <button type="button" class="secondary rate-down" aria-pressed=move || (chosen.get() == Some(false)).to_string() on:click=move |_| down(false, None)>"👎 No"</button>
            {move || said.get().map(|(ok, text)| view! { <span class={if ok { "flash ok" } else { "flash error" }} role="status">" "{text}</span> })}
            {move || (chosen.get() == Some(false)).then(|| view! {
                <form class="rate-why" on:submit=with_comment.clone()>
                    <label>"What was wrong or missing? (optional)"
                        <textarea name="rating_comment" rows="2" maxlength=MAX_COMMENT_CHARS.to_string() prop:value=move || comment.get() on:input=move |ev| comment.set(event_target_value(&ev))></textarea>
                    </label>
                    <button type="submit" class="secondary">"Send"</button>
                </form>
            })}
        </div>
    }
}

/// Save the question as golden, or pin the answer (edited if need be).
#[component]
fn Curate(question: String, answer: AnswerResponse) -> impl IntoView {
    let facts = RwSignal::new(String::new());
    let pin_text = RwSignal::new(if answer.refused { String::new() } else { answer.answer.clone() });
    let pinning = RwSignal::new(false);
    let said = RwSignal::new(None::<(bool, String)>);
    let golden_question = question.clone();
    let should_refuse = answer.refused;
    let save_golden = move |_| {
        let body = GoldenRequest {
            question: golden_question.clone(),
            // One a line; the engine drops blank lines and extra spaces.
            expected_facts: facts.get().lines().map(str::to_owned).collect(),
            should_refuse,
            expected_source: None,
            asked_as: None,
            origin: Some("playground".into()),
        };
        leptos::task::spawn_local(async move {
            said.set(Some(match client::send::<_, GoldenView>("POST", routes::GOLDEN.url(), &body).await {
                Ok(_) => (true, "Saved as a golden question: every saved version is evaluated on it.".into()),
                Err(message) => (false, message),
            }));
        });
    };
    let citations = answer.citations.clone();
    let pin_audience = RwSignal::new(String::new());
    let pin = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let served_to = pin_audience.get().trim().to_owned();
        let body = PinRequest {
            question: question.clone(),
            answer: pin_text.get(),
            citations: citations.clone(),
            audience: (!served_to.is_empty()).then_some(served_to),
        };
        leptos::task::spawn_local(async move {
            said.set(Some(match client::send::<_, PinView>("POST", routes::PINS.url(), &body).await {
                Ok(_) => {
                    pinning.set(false);
                    (true, "Pinned: this answer is served for the question and close paraphrases.".into())
                }
                Err(message) => (false, message),
            }));
        });
    };
    view! {
        <div class="panel curate">
            <h2>"Keep this question"</h2>
            {move || said.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            <div class="answer-actions">
                {(!should_refuse).then(|| view! {
                    <label>"Facts a right answer holds (one per line)"
                        <textarea name="golden_facts" rows="2" prop:value=move || facts.get() on:input=move |ev| facts.set(event_target_value(&ev))></textarea>
                    </label>
                })}
                <button type="button" class="save-golden" on:click=save_golden>
                    {if should_refuse { "Save as golden (should be refused)" } else { "Save as golden" }}
                </button>
                <button type="button" class="secondary pin-this" on:click=move |_| pinning.set(true)>
                    {if should_refuse { "Write an answer to pin" } else { "Pin this answer" }}
                </button>
            </div>
            {move || pinning.get().then(|| view! {
                <form class="pin-form" on:submit=pin.clone()>
                    <label>"Pinned answer" <textarea name="pinned_answer" rows="4" required prop:value=move || pin_text.get() on:input=move |ev| pin_text.set(event_target_value(&ev))></textarea></label>
                    <label>"Served to " <input name="pin_audience" placeholder="everyone, or roles: support,staff" prop:value=move || pin_audience.get() on:input=move |ev| pin_audience.set(event_target_value(&ev))/></label>
                    <button type="submit">"Pin"</button>
                </form>
            })}
        </div>
    }
}

#[component]
fn ProfilePanel(view: ProfileRetrievalView) -> impl IntoView {
    let s = view.settings.clone();
    let scope = if view.sources.is_empty() {
        "no enabled source".to_owned()
    } else {
        view.sources.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(", ")
    };
    view! {
        <div class="panel profile-retrieval">
            <h2>{match view.profile_version {
                Some(v) => format!("Profile version {v}"),
                None => "No profile yet: default settings".to_owned(),
            }}</h2>
            <p class="meta">{format!(
                "Scope: {scope} · top {} · cutoff {:.2} · weights vector {:.2} / text {:.2}",
                s.top_k, s.score_cutoff, s.vector_weight, s.text_weight
            )}</p>
        </div>
        <Hits results=view.results title="What this profile retrieves" empty="Nothing passed the cutoff"/>
    }
}

#[component]
fn Hits(results: SearchResults, title: &'static str, empty: &'static str) -> impl IntoView {
    view! {
        <div class="panel hits-panel">
            <h2>{title}</h2>
            {if results.results.is_empty() {
                view! { <p class="empty">{format!("{empty} ({} candidates considered).", results.candidates)}</p> }.into_any()
            } else {
                view! {
                    <ol class="hits">
                        {results.results.into_iter().map(|hit| view! {
                            <li class="hit">
                                <strong>{hit.title.clone()}</strong>
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
                .into_any()
            }}
        </div>
    }
}
