//! The Dashboard: Readiness, then usage, cache, spend, latency, refusals,
//! top queries, content gaps (of every caller, or of one audience), per-key
//! usage and the cost funnel for a time range, all from
//! `POST /admin/observability/` (rollups only), with the helpful rate of the
//! answers people rated; then the review queue of answers rated unhelpful
//! (`GET /admin/feedback`). Charts are inline SVG; everything loads after
//! hydration.

use leptos::prelude::*;

use crate::client;
use crate::routes;
use crate::wire::{
    helpful_percent, GapGroupView, GoldenRequest, GoldenView, MetricPoint, ObservabilityRequest,
    ObservabilityResponse, PinRequest, QueryCountView, ReviewItemView, ReviewQueueView, ReviewRequest,
    ReviewedView, SetupState,
};

/// The range selector's choices: (hours, label).
const RANGES: [(u32, &str); 3] = [(24, "Last 24 hours"), (24 * 7, "Last 7 days"), (24 * 30, "Last 30 days")];

#[component]
pub fn Dashboard() -> impl IntoView {
    view! {
        <section class="screen">
            <h1>"Dashboard"</h1>
            <Readiness/>
            <Metrics/>
            <ReviewQueue/>
        </section>
    }
}

#[component]
fn Metrics() -> impl IntoView {
    let hours = RwSignal::new(24u32);
    // "" lists every caller's questions; else `admin`, `everyone`, `role:NAME`.
    let audience = RwSignal::new(String::new());
    let (generation, set_generation) = signal(0u32);
    let data = LocalResource::new(move || {
        generation.track();
        let chosen = audience.get();
        let request = ObservabilityRequest {
            hours: Some(hours.get()),
            audience: (!chosen.is_empty()).then_some(chosen),
            ..ObservabilityRequest::default()
        };
        async move {
            client::send::<_, ObservabilityResponse>("POST", routes::OBSERVABILITY.url(), &request).await
        }
    });
    view! {
        <div class="panel metrics" aria-live="polite">
            <div class="panel-head">
                <h2>"Usage"</h2>
                <label class="range">
                    "Range "
                    <select
                        name="range"
                        on:change=move |ev| hours.set(event_target_value(&ev).parse().unwrap_or(24))
                        prop:value=move || hours.get().to_string()
                    >
                        {RANGES.iter().map(|(h, label)| view! { <option value=h.to_string()>{*label}</option> }).collect_view()}
                    </select>
                </label>
                <button class="refresh" on:click=move |_| set_generation.update(|n| *n += 1)>"Refresh"</button>
            </div>
            {move || match data.get() {
                None => view! { <p class="loading">"Loading the metrics…"</p> }.into_any(),
                Some(Ok(data)) => view! { <MetricsView data audience/> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
            }}
        </div>
    }
}

#[component]
fn MetricsView(data: ObservabilityResponse, audience: RwSignal<String>) -> impl IntoView {
    let t = data.totals.clone();
    if t.queries == 0 {
        return view! {
            <div class="empty" data-empty="true">
                <p>"No questions were answered in this range."</p>
                <p>
                    "Ask one in the " <a href="/playground">"Playground"</a>
                    ", or give a program or a web page a key on the " <a href="/access">"Access"</a>
                    " screen. Every answer, cache hit and refusal shows up here."
                </p>
            </div>
        }
        .into_any();
    }
    let per = if data.granularity == "hour" { "hour" } else { "day" };
    view! {
        <ul class="tiles" data-queries=t.queries.to_string()>
            <li><span class="value">{t.queries}</span><span class="name">"questions"</span></li>
            <li><span class="value">{format!("{:.0}%", t.hit_rate * 100.0)}</span><span class="name">"cache hit rate"</span></li>
            <li><span class="value">{t.refusals}</span><span class="name">"refusals"</span></li>
            <li class="helpful" data-helpful=t.helpful.to_string() data-unhelpful=t.unhelpful.to_string()>
                <span class="value">{helpful_percent(t.helpful, t.unhelpful).unwrap_or_else(|| "—".to_owned())}</span>
                <span class="name">{format!("rated helpful ({} of {} ratings)", t.helpful, t.helpful + t.unhelpful)}</span>
            </li>
            <li><span class="value">{format!("{:.0} ms", t.p95_ms)}</span><span class="name">"latency p95"</span></li>
            <li><span class="value">{usd(t.estimated_spend_usd)}</span><span class="name">"spend (estimate)"</span></li>
            <li><span class="value">{usd(t.estimated_savings_usd)}</span><span class="name">"saved by the cache (estimate)"</span></li>
        </ul>
        <p class="note">"Spend and savings are estimates from the prices set on the Providers screen."</p>
        <div class="charts">
            <Chart title=format!("Questions per {per} (cache hits darker)") series=data.series.clone()
                value=|p| p.totals.queries as f64 overlay=Some(|p: &MetricPoint| p.totals.cache_hits as f64)
                format=|v| format!("{v:.0}")/>
            <Chart title=format!("Latency p95 per {per}") series=data.series.clone()
                value=|p| p.totals.p95_ms overlay=None format=|v| format!("{v:.0} ms")/>
            <Chart title=format!("Refusals per {per}") series=data.series.clone()
                value=|p| p.totals.refusals as f64 overlay=None format=|v| format!("{v:.0}")/>
            <Chart title=format!("Estimated spend per {per}") series=data.series.clone()
                value=|p| p.totals.estimated_spend_usd overlay=None format=usd/>
            <Chart title=format!("Helpful rate per {per} (of the answers rated)") series=data.series.clone()
                value=|p| p.totals.helpful_rate.unwrap_or(0.0) * 100.0 overlay=None format=|v| format!("{v:.0}%")/>
        </div>
        <section class="surfaces">
            <h3>"Per surface"</h3>
            <table>
                <thead><tr><th>"Surface"</th><th>"Questions"</th><th>"Cache hit rate"</th><th>"Refusals"</th><th>"Helpful"</th></tr></thead>
                <tbody>
                    {data.surfaces.iter().map(|s| view! {
                        <tr class="surface" data-surface=s.surface.clone() data-helpful=s.totals.helpful.to_string() data-unhelpful=s.totals.unhelpful.to_string()>
                            <td>{s.surface.clone()}</td><td>{s.totals.queries}</td>
                            <td>{format!("{:.0}%", s.totals.hit_rate * 100.0)}</td><td>{s.totals.refusals}</td>
                            <td>{rated(s.totals.helpful, s.totals.unhelpful)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <AudienceChoice audiences=data.audiences.clone() audience/>
        <div class="lists" data-audience=data.audience.clone().unwrap_or_default()>
            <section class="top-queries">
                <h3>"Top questions"</h3>
                <TopQuestions rows=data.top_queries.clone() asked_as=data.audience.clone()/>
            </section>
            <section class="content-gaps">
                <h3>"Content gaps"</h3>
                <p class="note">"Questions Lore refused, grouped when they ask the same thing: add content that answers them."</p>
                <GapGroups groups=data.gap_groups.clone()/>
            </section>
            <section class="key-usage">
                <h3>"Usage per access key"</h3>
                <table>
                    <thead><tr><th>"Key"</th><th>"Questions"</th><th>"Spend (estimate)"</th><th>"Helpful"</th></tr></thead>
                    <tbody>
                        {data.keys.iter().map(|k| view! {
                            <tr class="key" data-key=k.name.clone() data-helpful=k.helpful.to_string() data-unhelpful=k.unhelpful.to_string()>
                                <td>{k.name.clone()}</td><td>{k.queries}</td><td>{usd(k.estimated_spend_usd)}</td>
                                <td>{rated(k.helpful, k.unhelpful)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
            <section class="version-usage">
                <h3>"Per profile version"</h3>
                <table>
                    <thead><tr><th>"Version"</th><th>"Questions"</th><th>"Helpful"</th></tr></thead>
                    <tbody>
                        {data.versions.iter().map(|v| view! {
                            <tr class="version" data-version=v.version.to_string() data-helpful=v.helpful.to_string() data-unhelpful=v.unhelpful.to_string()>
                                <td>{v.version}</td><td>{v.queries}</td><td>{rated(v.helpful, v.unhelpful)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
            <section class="funnel">
                <h3>"Cache stages and cost funnel"</h3>
                <table>
                    <thead><tr><th>"Stage"</th><th>"Decision"</th><th>"Questions"</th><th>"Spend"</th><th>"Reason (example)"</th></tr></thead>
                    <tbody>
                        {data.funnel.iter().map(|f| view! {
                            <tr class="funnel-stage" data-stage=f.stage.clone() data-decision=f.decision.clone()>
                                <td>{f.stage.replace('_', " ")}</td><td>{f.decision.clone()}</td>
                                <td>{f.count}</td><td class="spend">{usd(f.estimated_spend_usd)}</td>
                                <td class="reason">{f.reason.clone()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
        </div>
    }
    .into_any()
}

/// An SVG coordinate.
fn num(value: f64) -> String {
    format!("{value:.2}")
}

/// A helpful rate with its counts: "75% (3 of 4)", or a dash without ratings.
fn rated(helpful: i64, unhelpful: i64) -> String {
    helpful_percent(helpful, unhelpful)
        .map_or_else(|| "—".to_owned(), |rate| format!("{rate} ({helpful} of {})", helpful + unhelpful))
}

fn usd(value: f64) -> String {
    if value > 0.0 && value < 0.01 {
        format!("${value:.4}")
    } else {
        format!("${value:.2}")
    }
}

/// Each content gap with its count, its wordings and what to do about it.
#[component]
fn GapGroups(groups: Vec<GapGroupView>) -> impl IntoView {
    if groups.is_empty() {
        return view! { <p class="empty">"No refusals: every question found an answer."</p> }.into_any();
    }
    view! {
        <ul class="gap-groups">
            {groups.into_iter().map(|g| {
                let others: Vec<QueryCountView> = g.questions.into_iter().filter(|q| q.query != g.label).collect();
                view! {
                    <li class="gap-group" data-label=g.label.clone() data-count=g.count.to_string()>
                        <span class="label">{g.label.clone()}</span>
                        <span class="count">{g.count}</span>
                        {(!others.is_empty()).then(|| view! {
                            <ul class="wordings">
                                {others.into_iter().map(|q| view! {
                                    <li>{q.query}" ("{q.count}")"</li>
                                }).collect_view()}
                            </ul>
                        })}
                        <a class="add-source" href="/sources">"Add a source"</a>
                        " · "
                        <a class="pin-answer" href=format!("/playground?q={}", crate::pages::signin::urlencode(&g.label))>"Pin an answer"</a>
                    </li>
                }
            }).collect_view()}
        </ul>
    }
    .into_any()
}

/// Whose questions the lists show: every caller's, or one audience's (who
/// asked, as far as reading goes: what the Playground's "Answer as" names).
#[component]
fn AudienceChoice(audiences: Vec<String>, audience: RwSignal<String>) -> impl IntoView {
    // Made anew with each fetch: the chosen option is marked as it is
    // rendered (a `<select>`'s value set before its options exist is lost).
    let mut choices = audiences;
    let chosen = audience.get_untracked();
    if !chosen.is_empty() && !choices.contains(&chosen) {
        choices.push(chosen.clone());
    }
    view! {
        <label class="audience">
            "Questions of "
            <select name="audience" on:change=move |ev| audience.set(event_target_value(&ev))>
                <option value="" selected=chosen.is_empty()>"every caller"</option>
                {choices.into_iter().map(|a| {
                    let label = audience_label(&a);
                    let selected = a == chosen;
                    view! { <option value=a selected=selected>{label}</option> }
                }).collect_view()}
            </select>
        </label>
    }
}

/// An audience in words: `admin`, `everyone`, `role:NAME`.
fn audience_label(audience: &str) -> String {
    match audience {
        "admin" => "admins (read everything)".to_owned(),
        "everyone" => "everyone (the widget, keys without a user)".to_owned(),
        other => match other.strip_prefix("role:") {
            Some(role) => format!("role {role}"),
            None => other.to_owned(),
        },
    }
}

/// Top questions, each of which can become a golden question (asked as
/// `asked_as`, the audience the list is of, when there is one).
#[component]
fn TopQuestions(rows: Vec<QueryCountView>, asked_as: Option<String>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="empty">"No questions yet."</p> }.into_any();
    }
    view! {
        <ol class="counts">
            {rows.into_iter().map(|q| {
                let saved = RwSignal::new(None::<Result<(), String>>);
                let question = q.query.clone();
                let asked_as = asked_as.clone();
                let save = move |_| {
                    let body = GoldenRequest {
                        question: question.clone(),
                        origin: Some("dashboard".into()),
                        asked_as: asked_as.clone(),
                        ..GoldenRequest::default()
                    };
                    leptos::task::spawn_local(async move {
                        saved.set(Some(client::send::<_, GoldenView>("POST", routes::GOLDEN.url(), &body).await.map(|_| ())));
                    });
                };
                view! {
                    <li data-question=q.query.clone()>
                        <span class="text">{q.query.clone()}</span> <span class="count">{q.count}</span>
                        {move || match saved.get() {
                            None => view! { <button type="button" class="link save-golden" on:click=save.clone()>"Save as golden"</button> }.into_any(),
                            Some(Ok(())) => view! { <span class="meta">" golden: set its expected facts on the Prompt screen"</span> }.into_any(),
                            Some(Err(message)) => view! { <span class="error">{message}</span> }.into_any(),
                        }}
                    </li>
                }
            }).collect_view()}
        </ol>
    }
    .into_any()
}

/// A bar chart of one value per bucket as inline SVG, with an optional
/// darker overlay (a part of the value, such as cache hits of questions).
#[component]
fn Chart(
    title: String,
    series: Vec<MetricPoint>,
    value: fn(&MetricPoint) -> f64,
    overlay: Option<fn(&MetricPoint) -> f64>,
    format: fn(f64) -> String,
) -> impl IntoView {
    const WIDTH: f64 = 480.0;
    const HEIGHT: f64 = 120.0;
    let max = series.iter().map(value).fold(0.0f64, f64::max);
    let scale = if max > 0.0 { HEIGHT / max } else { 0.0 };
    let step = WIDTH / series.len().max(1) as f64;
    let bar = (step * 0.8).max(1.0);
    let bars = series
        .iter()
        .enumerate()
        .map(|(i, point)| {
            let x = i as f64 * step;
            let v = value(point);
            let h = v * scale;
            let part = overlay.map(|f| f(point) * scale).unwrap_or(0.0);
            let tip = format!("{}: {}", point.bucket, format(v));
            view! {
                <g>
                    <title>{tip}</title>
                    <rect class="bar" x=num(x) y=num(HEIGHT - h) width=num(bar) height=num(h)></rect>
                    <rect class="bar overlay" x=num(x) y=num(HEIGHT - part) width=num(bar) height=num(part)></rect>
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="chart">
            <figcaption>{title} <span class="max">{format!("max {}", format(max))}</span></figcaption>
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") width="100%" height="120" role="img" preserveAspectRatio="none">
                {bars}
            </svg>
        </figure>
    }
}

/// The answers people rated unhelpful, grouped when their questions mean
/// the same thing, newest first, each with what can be done about it.
#[component]
fn ReviewQueue() -> impl IntoView {
    let open_only = RwSignal::new(false);
    let (generation, set_generation) = signal(0u32);
    let data = LocalResource::new(move || {
        generation.track();
        let url = if open_only.get() {
            format!("{}?open=true", routes::FEEDBACK.url())
        } else {
            routes::FEEDBACK.url().to_owned()
        };
        async move { client::get::<ReviewQueueView>(&url).await }
    });
    view! {
        <div class="panel review-queue" aria-live="polite">
            <div class="panel-head">
                <h2>"Answers rated unhelpful"</h2>
                <label class="open-only">
                    <input type="checkbox" name="open_only" bind:checked=open_only/>
                    " Only those not dealt with"
                </label>
                <button class="refresh" on:click=move |_| set_generation.update(|n| *n += 1)>"Refresh"</button>
            </div>
            {move || match data.get() {
                None => view! { <p class="loading">"Loading the review queue…"</p> }.into_any(),
                Some(Ok(queue)) if queue.groups.is_empty() => view! {
                    <p class="empty">"No answer was rated unhelpful. Ratings come from the thumbs under each answer in the widget and the Playground, from POST /answer/feedback, lore ask --rate and the tool server's rate_answer."</p>
                }.into_any(),
                Some(Ok(queue)) => view! {
                    <ul class="review-groups">
                        {queue.groups.into_iter().map(|g| view! {
                            <li class="review-group" data-label=g.label.clone()>
                                <h3>{g.label.clone()} <span class="count">{format!(" ({})", g.items.len())}</span></h3>
                                <ul class="review-items">
                                    {g.items.into_iter().map(|item| view! { <ReviewItem item/> }.into_any()).collect_view()}
                                </ul>
                            </li>
                        }).collect_view()}
                    </ul>
                }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
            }}
        </div>
    }
}

/// Which action's form is open on a review item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Editing {
    Pin,
    Golden,
}

/// One unhelpful answer: what was asked and served, the comment (as text),
/// and its actions; once dealt with, what was done.
#[component]
fn ReviewItem(item: ReviewItemView) -> impl IntoView {
    let reviewed = RwSignal::new(item.reviewed.clone());
    let editing = RwSignal::new(None::<Editing>);
    let error = RwSignal::new(None::<String>);
    let pin_text = RwSignal::new(if item.refused { String::new() } else { item.answer.clone() });
    let facts = RwSignal::new(String::new());
    let should_refuse = RwSignal::new(false);
    // The served answer's citations may be what was wrong: the admin keeps
    // them or pins the correction without.
    let keep_citations = RwSignal::new(!item.citations.is_empty());
    let cited = !item.citations.is_empty();
    let url = routes::FEEDBACK_REVIEW.at([&item.trace_id]);
    let act = move |request: ReviewRequest| {
        let url = url.clone();
        leptos::task::spawn_local(async move {
            match client::send::<_, ReviewedView>("POST", &url, &request).await {
                Ok(done) => {
                    reviewed.set(Some(done));
                    editing.set(None);
                    error.set(None);
                }
                Err(message) => error.set(Some(message)),
            }
        });
    };
    // A fix serves, and a golden question is asked as, whoever was answered.
    let asked_as = item.audience.clone().filter(|a| a != "admin");
    let served_to = asked_as.as_deref().and_then(|a| a.strip_prefix("role:")).map(str::to_owned);
    let (question, citations) = (item.question.clone(), item.citations.clone());
    let pin = {
        let act = act.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            act(ReviewRequest::Pin(PinRequest {
                question: question.clone(),
                answer: pin_text.get(),
                citations: if keep_citations.get() { citations.clone() } else { Vec::new() },
                audience: served_to.clone(),
            }));
        }
    };
    let question = item.question.clone();
    let golden = {
        let act = act.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let refuse = should_refuse.get();
            act(ReviewRequest::Golden(GoldenRequest {
                question: question.clone(),
                expected_facts: if refuse {
                    Vec::new()
                } else {
                    facts.get().lines().map(str::to_owned).collect()
                },
                should_refuse: refuse,
                origin: Some("dashboard".into()),
                asked_as: asked_as.clone(),
                ..GoldenRequest::default()
            }));
        }
    };
    let dismiss = move |_| act(ReviewRequest::Dismiss);
    view! {
        <li class="review-item" data-trace=item.trace_id.clone()>
            <p class="question"><strong>"Asked: "</strong>{item.question.clone()}</p>
            <p class="answer-text" data-refused=item.refused.to_string()>
                <strong>{if item.refused { "Refused: " } else { "Answered: " }}</strong>{item.answer.clone()}
            </p>
            {item.comment.clone().map(|comment| view! { <blockquote class="comment">{comment}</blockquote> })}
            {(!item.citations.is_empty()).then(|| view! {
                <ol class="citations">
                    {item.citations.iter().map(|c| {
                        let label = format!("[{}] {}", c.index, c.title);
                        let href = c.url.clone().unwrap_or_else(|| "/sources".to_owned());
                        view! { <li><a class="open-source" href=href target="_blank" rel="noopener">{label}</a></li> }
                    }).collect_view()}
                </ol>
            })}
            <p class="meta">{format!(
                "{} · via {} · asked as {} · profile version {} · trace {}",
                item.rated_at,
                item.surface,
                audience_label(item.audience.as_deref().unwrap_or("admin")),
                item.profile_version,
                item.trace_id
            )}</p>
            {move || error.get().map(|message| view! { <p class="flash error" role="status">{message}</p> })}
            {move || match reviewed.get() {
                Some(done) => view! {
                    <p class="reviewed" data-done=done.done.clone() data-made=done.made.clone().unwrap_or_default()>
                        {match done.done.as_str() {
                            "pinned" => format!("Pinned a corrected answer (pin {})", done.made.clone().unwrap_or_default()),
                            "golden" => format!("Added as golden question {}", done.made.clone().unwrap_or_default()),
                            _ => "Dismissed".to_owned(),
                        }}
                        {format!(" · by {} at {}", done.by, done.at)}
                    </p>
                }.into_any(),
                None => view! {
                    <div class="review-actions">
                        <button type="button" class="pin-corrected" on:click=move |_| editing.set(Some(Editing::Pin))>"Pin a corrected answer"</button>
                        " "
                        <button type="button" class="secondary add-golden" on:click=move |_| editing.set(Some(Editing::Golden))>"Add as golden question"</button>
                        " "
                        <button type="button" class="secondary dismiss" on:click=dismiss.clone()>"Dismiss"</button>
                    </div>
                }.into_any(),
            }}
            {move || match editing.get() {
                Some(Editing::Pin) => view! {
                    <form class="pin-form" on:submit=pin.clone()>
                        <label>"Corrected answer"
                            <textarea name="pinned_answer" rows="4" required prop:value=move || pin_text.get() on:input=move |ev| pin_text.set(event_target_value(&ev))></textarea>
                        </label>
                        {cited.then(|| view! {
                            <label><input type="checkbox" name="keep_citations" bind:checked=keep_citations/>" Keep the served answer's citations"</label>
                        })}
                        <button type="submit">"Pin"</button>
                        " "
                        <button type="button" class="secondary" on:click=move |_| editing.set(None)>"Cancel"</button>
                    </form>
                }.into_any(),
                Some(Editing::Golden) => view! {
                    <form class="golden-form" on:submit=golden.clone()>
                        <label>"Facts a right answer holds (one per line)"
                            <textarea name="golden_facts" rows="2" prop:value=move || facts.get() on:input=move |ev| facts.set(event_target_value(&ev))></textarea>
                        </label>
                        <label><input type="checkbox" name="should_refuse" bind:checked=should_refuse/>" It should be refused"</label>
                        <button type="submit">"Add"</button>
                        " "
                        <button type="button" class="secondary" on:click=move |_| editing.set(None)>"Cancel"</button>
                    </form>
                }.into_any(),
                None => ().into_any(),
            }}
        </li>
    }
}

/// Readiness, fetched by the browser from `GET /admin/setup-state/`, the same
/// endpoint programs use. It is rendered after hydration, with a refresh button.
#[component]
fn Readiness() -> impl IntoView {
    let (generation, set_generation) = signal(0u32);
    let state = LocalResource::new(move || {
        generation.track();
        fetch_setup_state()
    });
    view! {
        <div class="panel readiness" aria-live="polite">
            <div class="panel-head">
                <h2>"Readiness"</h2>
                <button class="refresh" on:click=move |_| set_generation.update(|n| *n += 1)>
                    "Refresh"
                </button>
            </div>
            // No Suspense: the data only ever loads in the browser, so server and
            // hydrating client both render "Checking…" first, then the result.
            {move || match state.get() {
                None => view! { <p class="loading">"Checking readiness…"</p> }.into_any(),
                Some(Ok(state)) => view! { <ReadinessView state/> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
            }}
        </div>
    }
}

#[component]
fn ReadinessView(state: SetupState) -> impl IntoView {
    let verdict = if state.can_answer { "yes" } else { "no" };
    let wizard_complete = state.wizard_complete;
    view! {
        <p class="verdict" data-can-answer=verdict>
            "Can answer questions: " <strong>{if state.can_answer { "Yes" } else { "Not yet" }}</strong>
        </p>
        <ul class="checks">
            {state
                .checks
                .into_iter()
                .map(|check| {
                    let fix = (check.status != "ok").then(|| fix(&check.name, wizard_complete)).flatten();
                    view! {
                        <li class=format!("check {}", check.status) data-check=check.name.clone()>
                            <span class="status">{check.status.clone()}</span>
                            <span class="name">{label(&check.name)}</span>
                            <span class="detail">{check.detail}</span>
                            {fix.map(|(href, text)| view! { <a class="fix" href=href>{text}</a> })}
                        </li>
                    }
                })
                .collect_view()}
            {state.active_evals.map(|e| view! {
                <li class="check evals" data-check="evals">
                    <span class="status">{format!("{}/{}", e.correct, e.questions)}</span>
                    <span class="name">"Eval score"</span>
                    <span class="detail">{format!("The active version answered {} of {} golden questions right at its last eval ({}).", e.correct, e.questions, e.ran_at)}</span>
                </li>
            })}
        </ul>
    }
}

/// Where a check that is not ok gets fixed: the wizard's step while the
/// wizard is not finished, the screen that owns it after. Configuration is
/// fixed in `lore.toml` or the environment, not in the console.
fn fix(check: &str, wizard_complete: bool) -> Option<(&'static str, &'static str)> {
    match (check, wizard_complete) {
        ("embedding", _) => Some(("/providers", "Providers: the embedding role →")),
        ("provider", false) => Some(("/setup", "Setup wizard: the provider step →")),
        ("provider", true) => Some(("/providers", "Providers: bind a generation target →")),
        ("indexing", _) => Some(("/sources", "Sources: indexing runs →")),
        ("content", false) => Some(("/setup", "Setup wizard: the first source →")),
        ("content", true) => Some(("/sources", "Sources: add or sync a source →")),
        ("profile_version", false) => Some(("/setup", "Setup wizard: it creates the profile →")),
        ("profile_version", true) => Some(("/prompt", "Prompt: activate a version →")),
        _ => None,
    }
}

fn label(check: &str) -> &'static str {
    match check {
        "configuration" => "Configuration",
        "embedding" => "Embedding model",
        "provider" => "Generation provider",
        "indexing" => "Indexing",
        "content" => "Content",
        "profile_version" => "Active profile version",
        _ => "Other",
    }
}

#[cfg(feature = "hydrate")]
async fn fetch_setup_state() -> Result<SetupState, String> {
    let response = gloo_net::http::Request::get(routes::SETUP_STATE.url())
        .send()
        .await
        .map_err(|err| format!("Readiness could not be fetched: {err}"))?;
    if response.ok() {
        response.json().await.map_err(|err| format!("Readiness answered nonsense: {err}"))
    } else {
        let body: Result<crate::wire::ErrorBody, _> = response.json().await;
        Err(match body {
            Ok(body) => format!("{} ({})", body.error.message, body.error.code),
            Err(_) => format!("Readiness failed with status {}", response.status()),
        })
    }
}

// The server never runs a LocalResource's fetcher; it renders the fallback.
#[cfg(not(feature = "hydrate"))]
async fn fetch_setup_state() -> Result<SetupState, String> {
    Err("Readiness loads in the browser.".to_owned())
}
