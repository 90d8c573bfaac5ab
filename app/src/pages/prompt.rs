//! The Prompt screen: the persona and its details, the prompt and behaviour
//! editor, the history of immutable profile versions (view, diff against
//! the active one, restore), the golden questions with their evals, and the
//! pinned answers. A save names the version the editor started from; if
//! another admin activated a version meanwhile, the save is refused and the
//! screen says so instead of overwriting. With golden questions present, a
//! save that answers them worse than the active version stays inactive: the
//! history shows it beside the active one, question by question, with
//! "Activate anyway".

use leptos::prelude::*;

use super::judging::JudgingUnderWay;
use crate::client;
use crate::routes;
use crate::wire::{
    EvalReportView, EvalResultView, EvalRunView, GoldenRequest, GoldenView, PersonaRequest, PinView,
    ProfileDetails, ProfileOverview, ProfileSnapshot, ProfileVersionView, RestoreRequest, SaveProfileRequest,
};

#[component]
pub fn Prompt() -> impl IntoView {
    let overview = RwSignal::new(None::<Result<ProfileOverview, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            overview.set(Some(client::get::<ProfileOverview>(routes::PROFILE.url()).await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));
    view! {
        <section class="screen prompt">
            <h1>"Prompt"</h1>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            <JudgingUnderWay/>
            {move || match overview.get() {
                None => view! { <p class="loading">"Loading the profile…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(data)) => match data.active.clone() {
                    None => view! { <ChoosePersona data notice/> }.into_any(),
                    Some(active) => view! {
                        <Editor data=data.clone() active notice refresh/>
                        <History data notice refresh/>
                        <GoldenQuestions notice refresh/>
                        <PinnedAnswers notice/>
                    }
                    .into_any(),
                },
            }}
        </section>
    }
}

/// Before the first index: the persona the profile will be built from.
#[component]
fn ChoosePersona(data: ProfileOverview, notice: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    let persona = RwSignal::new(data.personas.first().map(|p| p.key.clone()).unwrap_or_default());
    let organisation = RwSignal::new(String::new());
    let product = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = PersonaRequest {
            persona: persona.get(),
            details: ProfileDetails {
                organisation: Some(organisation.get()),
                product: Some(product.get()),
                ..ProfileDetails::default()
            },
        };
        leptos::task::spawn_local(async move {
            match client::send_no_content("PUT", routes::PROFILE_PERSONA.url(), &body).await {
                Ok(()) => notice
                    .set(Some((true, "Saved: the first index builds the profile from this persona.".into()))),
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    view! {
        <form class="panel" on:submit=submit>
            <p class="empty">"No profile yet: it is created from the persona you choose when the first index starts."</p>
            <fieldset class="personas">
                <legend>"Persona"</legend>
                {data.personas.into_iter().map(|p| {
                    let key = p.key.clone();
                    let value = key.clone();
                    let checked = key.clone();
                    view! {
                        <label class="persona">
                            <input type="radio" name="persona" value=value prop:checked=move || persona.get() == checked on:change=move |_| persona.set(key.clone())/>
                            <strong>{p.name}</strong>" "<span class="meta">{p.summary}</span>
                        </label>
                    }
                }).collect_view()}
            </fieldset>
            <label>"Organisation" <input name="organisation" bind:value=organisation/></label>
            <label>"Product" <input name="product" bind:value=product/></label>
            <button type="submit">"Use this persona"</button>
        </form>
    }
}

#[component]
fn Editor(
    data: ProfileOverview,
    active: ProfileVersionView,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let base = active.version;
    let s = active.snapshot.clone();
    let persona = RwSignal::new(s.persona.clone());
    let organisation = RwSignal::new(s.details.organisation.clone().unwrap_or_default());
    let product = RwSignal::new(s.details.product.clone().unwrap_or_default());
    let audience = RwSignal::new(s.details.audience.clone().unwrap_or_default());
    let extra = RwSignal::new(s.details.extra_instructions.clone().unwrap_or_default());
    let prompt = RwSignal::new(s.prompt.clone());
    let tone = RwSignal::new(s.behavior.tone.clone());
    let length = RwSignal::new(s.behavior.length.clone());
    let citation_style = RwSignal::new(s.behavior.citation_style.clone());
    let composition = RwSignal::new(s.behavior.composition.clone());
    let refusal = RwSignal::new(s.behavior.refusal.clone());
    let cache_enabled = RwSignal::new(s.cache.enabled);
    let min_similarity = RwSignal::new(s.cache.min_similarity.to_string());
    let max_age = RwSignal::new(s.cache.max_age_seconds.to_string());
    let top_k = RwSignal::new(s.retrieval.top_k.to_string());
    let cutoff = RwSignal::new(s.retrieval.score_cutoff.to_string());
    let note = RwSignal::new(String::new());
    let conflict = RwSignal::new(None::<String>);
    let original = s.clone();

    let details = move || {
        let opt = |v: String| (!v.trim().is_empty()).then(|| v.trim().to_owned());
        ProfileDetails {
            organisation: opt(organisation.get()),
            product: opt(product.get()),
            audience: opt(audience.get()),
            extra_instructions: opt(extra.get()),
        }
    };
    let reset_prompt = move |_| {
        let body = PersonaRequest { persona: persona.get(), details: details() };
        leptos::task::spawn_local(async move {
            match client::send::<_, ProfileSnapshot>("POST", routes::PROFILE_RENDER.url(), &body).await {
                Ok(rendered) => {
                    prompt.set(rendered.prompt);
                    tone.set(rendered.behavior.tone);
                    length.set(rendered.behavior.length);
                    citation_style.set(rendered.behavior.citation_style);
                    composition.set(rendered.behavior.composition);
                    refusal.set(rendered.behavior.refusal);
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut snapshot = original.clone();
        snapshot.persona = persona.get();
        snapshot.details = details();
        snapshot.prompt = prompt.get();
        snapshot.behavior.tone = tone.get();
        snapshot.behavior.length = length.get();
        snapshot.behavior.citation_style = citation_style.get();
        snapshot.behavior.composition = composition.get();
        snapshot.behavior.refusal = refusal.get();
        snapshot.cache.enabled = cache_enabled.get();
        snapshot.cache.min_similarity =
            min_similarity.get().trim().parse().unwrap_or(snapshot.cache.min_similarity);
        snapshot.cache.max_age_seconds =
            max_age.get().trim().parse().unwrap_or(snapshot.cache.max_age_seconds);
        snapshot.retrieval.top_k = top_k.get().trim().parse().unwrap_or(snapshot.retrieval.top_k);
        snapshot.retrieval.score_cutoff =
            cutoff.get().trim().parse().unwrap_or(snapshot.retrieval.score_cutoff);
        let note_text = note.get();
        let body = SaveProfileRequest {
            base_version: base,
            snapshot,
            note: (!note_text.trim().is_empty()).then_some(note_text),
        };
        leptos::task::spawn_local(async move {
            match client::send::<_, ProfileVersionView>("POST", routes::PROFILE_VERSIONS.url(), &body).await {
                Ok(saved) if saved.active => {
                    conflict.set(None);
                    notice
                        .set(Some((true, format!("Saved as version {}; it is now active.", saved.version))));
                    refresh();
                }
                Ok(saved) => {
                    conflict.set(None);
                    let why = saved
                        .eval_report()
                        .and_then(|r| r.gate)
                        .map(|g| g.regressions.join("; "))
                        .unwrap_or_default();
                    notice.set(Some((
                        false,
                        format!(
                            "Saved as version {}, but not activated: it {why}. Compare it in the history below; activate it anyway if you mean to.",
                            saved.version
                        ),
                    )));
                    refresh();
                }
                Err(message) if message.contains("profile_version_conflict") => conflict.set(Some(message)),
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    let personas = data.personas.clone();
    view! {
        <form class="panel editor" on:submit=submit>
            <h2>{format!("Editing from version {base} (active)")}</h2>
            {active.eval_report().map(|r| view! {
                <p class="meta eval-score" data-correct=r.totals.correct.to_string() data-questions=r.totals.questions.to_string()>
                    {format!("Golden questions: {} of {} right at its last eval ({}).", r.totals.correct, r.totals.questions, r.ran_at)}
                </p>
            })}
            {move || conflict.get().map(|message| view! {
                <div class="flash error conflict" role="alert">
                    <p>{message}</p>
                    <p>"Your edit was not saved and nothing was overwritten. Reload to see the active version, then reapply your change."</p>
                    <button type="button" on:click=move |_| refresh()>"Reload"</button>
                </div>
            })}
            <label>
                "Persona"
                <select name="persona" prop:value=move || persona.get() on:change=move |ev| persona.set(event_target_value(&ev))>
                    {personas.into_iter().map(|p| view! { <option value=p.key.clone()>{p.name}</option> }).collect_view()}
                </select>
            </label>
            <label>"Organisation" <input name="organisation" bind:value=organisation/></label>
            <label>"Product" <input name="product" bind:value=product/></label>
            <label>"Audience" <input name="audience" bind:value=audience/></label>
            <label>"Extra instructions" <textarea name="extra" prop:value=move || extra.get() on:input=move |ev| extra.set(event_target_value(&ev))></textarea></label>
            <button type="button" class="secondary" on:click=reset_prompt>"Rebuild the prompt from the persona"</button>
            <label>"Prompt" <textarea name="prompt" rows="10" prop:value=move || prompt.get() on:input=move |ev| prompt.set(event_target_value(&ev))></textarea></label>
            <div class="row">
                <label>"Tone" <select name="tone" prop:value=move || tone.get() on:change=move |ev| tone.set(event_target_value(&ev))>
                    <option value="neutral">"Neutral"</option><option value="friendly">"Friendly"</option><option value="formal">"Formal"</option><option value="technical">"Technical"</option>
                </select></label>
                <label>"Length" <select name="length" prop:value=move || length.get() on:change=move |ev| length.set(event_target_value(&ev))>
                    <option value="brief">"Brief"</option><option value="standard">"Standard"</option><option value="detailed">"Detailed"</option>
                </select></label>
                <label>"Citations" <select name="citation_style" prop:value=move || citation_style.get() on:change=move |ev| citation_style.set(event_target_value(&ev))>
                    <option value="inline">"Inline [1]"</option><option value="footnotes">"Footnotes"</option>
                </select></label>
                <label>"Answers" <select name="composition" prop:value=move || composition.get() on:change=move |ev| composition.set(event_target_value(&ev))>
                    <option value="auto">"Automatic: quoted on small on-node models"</option>
                    <option value="generated">"Written by the model"</option>
                    <option value="quoted">"Quoted from the passages"</option>
                </select></label>
            </div>
            <label>"Refusal wording" <input name="refusal" bind:value=refusal/></label>
            <fieldset class="row">
                <legend>"Semantic cache and retrieval"</legend>
                <label><input type="checkbox" name="cache_enabled" bind:checked=cache_enabled/>" cache answers"</label>
                <label>"Min. similarity" <input name="min_similarity" bind:value=min_similarity/></label>
                <label>"Max. age (s)" <input name="max_age_seconds" bind:value=max_age/></label>
                <label>"Top-k" <input name="top_k" bind:value=top_k/></label>
                <label>"Score cutoff" <input name="score_cutoff" bind:value=cutoff/></label>
            </fieldset>
            <label>"Note" <input name="note" bind:value=note placeholder="What changed"/></label>
            <button type="submit">"Save as a new version"</button>
        </form>
    }
}

#[component]
fn History(
    data: ProfileOverview,
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let shown = RwSignal::new(None::<(String, ProfileVersionView)>);
    let active = data.active.clone();
    let active_version = active.as_ref().map(|a| a.version);
    view! {
        <div class="panel history">
            <h2>"Version history"</h2>
            <ol class="versions">
                {data.versions.into_iter().map(|v| {
                    let view_v = v.clone();
                    let diff_v = v.clone();
                    let number = v.version;
                    let kept_inactive = v.kept_inactive_by_gate();
                    let report = v.eval_report();
                    let restore = move |anyway: bool| {
                        // Versions are `i32` on the server; one that does not fit cannot be active.
                        let body = RestoreRequest {
                            expected_active: active_version.and_then(|active| i32::try_from(active).ok()),
                            anyway,
                        };
                        leptos::task::spawn_local(async move {
                            match client::send::<_, ProfileVersionView>("POST", &routes::PROFILE_RESTORE.at([&number.to_string()]), &body).await {
                                Ok(_) => {
                                    let what = if anyway { "is active: activated anyway, and recorded" } else { "is active again" };
                                    notice.set(Some((true, format!("Version {number} {what}."))));
                                    refresh();
                                }
                                Err(message) => notice.set(Some((false, message))),
                            }
                        });
                    };
                    view! {
                        <li class="version" data-version=v.version.to_string()>
                            <strong>{format!("Version {}", v.version)}</strong>
                            {v.active.then(|| view! { <span class="badge ok">"active"</span> })}
                            {kept_inactive.then(|| view! { <span class="badge warn held">"kept inactive by the eval gate"</span> })}
                            <span class="meta">{format!(" {} · {}", v.created_at, v.created_by)}</span>
                            {v.note.clone().map(|n| view! { <span class="note">{format!(" — {n}")}</span> })}
                            {report.as_ref().map(|r| view! { <span class="meta eval">{format!(" · golden {} of {} right", r.totals.correct, r.totals.questions)}</span> })}
                            <span class="meta helpful" data-helpful=v.helpful.to_string() data-unhelpful=v.unhelpful.to_string()>
                                {crate::wire::helpful_percent(v.helpful, v.unhelpful).map_or_else(
                                    || " · no ratings yet".to_owned(),
                                    |rate| format!(" · rated helpful {rate} ({} of {})", v.helpful, v.helpful + v.unhelpful),
                                )}
                            </span>
                            <button type="button" class="secondary" on:click=move |_| shown.set(Some(("view".into(), view_v.clone())))>"View"</button>
                            {(!v.active).then(|| view! {
                                <button type="button" class="secondary" on:click=move |_| shown.set(Some(("diff".into(), diff_v.clone())))>"Diff with active"</button>
                                {if kept_inactive {
                                    view! { <button type="button" class="danger activate-anyway" on:click=move |_| restore(true)>"Activate anyway"</button> }.into_any()
                                } else {
                                    view! { <button type="button" on:click=move |_| restore(false)>"Restore"</button> }.into_any()
                                }}
                            })}
                            {report.and_then(|r| r.gate.is_some().then_some(r)).map(|r| view! { <EvalComparison version=number report=r/> })}
                        </li>
                    }
                }).collect_view()}
            </ol>
            {move || shown.get().map(|(mode, version)| {
                let text = pretty(&version.snapshot);
                let body = if mode == "diff" {
                    let base = active.as_ref().map(|a| pretty(&a.snapshot)).unwrap_or_default();
                    view! {
                        <pre class="diff">
                            {diff_lines(&base, &text).into_iter().map(|(mark, line)| {
                                let class = match mark { '+' => "added", '-' => "removed", _ => "same" };
                                view! { <span class=class>{format!("{mark} {line}\n")}</span> }
                            }).collect_view()}
                        </pre>
                    }
                    .into_any()
                } else {
                    view! { <pre class="snapshot">{text}</pre> }.into_any()
                };
                view! {
                    <div class="shown-version">
                        <h3>{if mode == "diff" { format!("Version {} against the active version", version.version) } else { format!("Version {}", version.version) }}</h3>
                        {body}
                        <button type="button" class="secondary" on:click=move |_| shown.set(None)>"Close"</button>
                    </div>
                }
            })}
        </div>
    }
}

/// A saved candidate beside the version it was compared with, question by question.
#[component]
fn EvalComparison(version: i64, report: EvalReportView) -> impl IntoView {
    let Some(gate) = report.gate.clone() else {
        return ().into_any();
    };
    let outcome = |r: Option<&EvalResultView>| match r {
        None => ("—".to_owned(), "none"),
        Some(r) if r.error.is_some() => ("failed".to_owned(), "wrong"),
        Some(r) if r.correct => (if r.refused { "refused, rightly" } else { "right" }.to_owned(), "right"),
        Some(r) if r.refused => ("refused".to_owned(), "wrong"),
        Some(r) if r.should_refuse => ("answered, should refuse".to_owned(), "wrong"),
        Some(r) => (format!("missing {}", r.missing_facts.join(", ")), "wrong"),
    };
    let verdict = if gate.passed {
        "Not worse than the version it was compared with.".to_owned()
    } else {
        format!("Worse: it {}.", gate.regressions.join("; "))
    };
    view! {
        <details class="eval-comparison" open=!gate.passed>
            <summary>{format!("Golden questions: version {version} {} of {}, version {} {} of {}", report.totals.correct, report.totals.questions, gate.baseline_version, gate.baseline.correct, gate.baseline.questions)}</summary>
            <p class="meta">{verdict}</p>
            {gate.activated_anyway.clone().map(|o| view! { <p class="meta">{format!("Activated anyway by {} at {}.", o.by, o.at)}</p> })}
            <table class="evals">
                <thead><tr><th>"Question"</th><th>{format!("Version {version}")}</th><th>{format!("Version {}", gate.baseline_version)}</th></tr></thead>
                <tbody>
                    {report.results.iter().map(|r| {
                        let base = gate.baseline_results.iter().find(|b| b.id == r.id);
                        let (mine, mine_class) = outcome(Some(r));
                        let (theirs, theirs_class) = outcome(base);
                        view! {
                            <tr data-question=r.question.clone()>
                                <td>{r.question.clone()}</td>
                                <td class=mine_class>{mine}</td>
                                <td class=theirs_class>{theirs}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </details>
    }
    .into_any()
}

/// The golden questions: the set every saved version is evaluated against.
#[component]
fn GoldenQuestions(
    notice: RwSignal<Option<(bool, String)>>,
    refresh: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let set = RwSignal::new(None::<Result<Vec<GoldenView>, String>>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            set.set(Some(client::get::<Vec<GoldenView>>(routes::GOLDEN.url()).await));
        });
    });
    let question = RwSignal::new(String::new());
    let facts = RwSignal::new(String::new());
    let should_refuse = RwSignal::new(false);
    let running = RwSignal::new(false);
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = GoldenRequest {
            question: question.get(),
            // One a line; the engine drops blank lines and extra spaces.
            expected_facts: facts.get().lines().map(str::to_owned).collect(),
            should_refuse: should_refuse.get(),
            expected_source: None,
            asked_as: None,
            origin: Some("prompt".into()),
        };
        leptos::task::spawn_local(async move {
            match client::send::<_, GoldenView>("POST", routes::GOLDEN.url(), &body).await {
                Ok(_) => {
                    question.set(String::new());
                    facts.set(String::new());
                    should_refuse.set(false);
                    reload.update(|n| *n = n.wrapping_add(1));
                }
                Err(message) => notice.set(Some((false, message))),
            }
        });
    };
    let run = move |_| {
        running.set(true);
        leptos::task::spawn_local(async move {
            match client::send::<_, EvalRunView>(
                "POST",
                routes::PROFILE_EVALS.url(),
                &crate::wire::RunEvalsRequest::default(),
            )
            .await
            {
                Ok(ran) => {
                    let t = &ran.report.totals;
                    let worse = if ran.regressions.is_empty() {
                        String::new()
                    } else {
                        format!(" Worse than its last eval: {}.", ran.regressions.join("; "))
                    };
                    notice.set(Some((
                        ran.regressions.is_empty(),
                        format!(
                            "Version {}: {} of {} golden questions right.{worse}",
                            ran.version, t.correct, t.questions
                        ),
                    )));
                    refresh();
                }
                Err(message) => notice.set(Some((false, message))),
            }
            running.set(false);
        });
    };
    view! {
        <div class="panel golden">
            <h2>"Golden questions"</h2>
            <p class="meta">"Every saved version answers these before it serves; one that answers fewer right, or refuses more it should answer, stays inactive until you activate it anyway."</p>
            {move || match set.get() {
                None => view! { <p class="loading">"Loading…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"No golden questions yet. Add one here, or save one from the Playground."</p> }.into_any(),
                Some(Ok(list)) => view! {
                    <ul class="golden-questions">
                        {list.into_iter().map(|g| {
                            let id = g.id.clone();
                            let remove = move |_| {
                                let id = id.clone();
                                leptos::task::spawn_local(async move {
                                    match client::delete(&routes::GOLDEN_ONE.at([&id])).await {
                                        Ok(()) => reload.update(|n| *n = n.wrapping_add(1)),
                                        Err(message) => notice.set(Some((false, message))),
                                    }
                                });
                            };
                            let expects = if g.should_refuse {
                                "should be refused".to_owned()
                            } else if g.expected_facts.is_empty() {
                                "should be answered".to_owned()
                            } else {
                                format!("expects {}", g.expected_facts.iter().map(|f| format!("“{f}”")).collect::<Vec<_>>().join(", "))
                            };
                            view! {
                                <li class="golden-question" data-question=g.question.clone()>
                                    <strong>{g.question.clone()}</strong>" "<span class="meta">{format!("{expects} · from {}", g.origin)}</span>
                                    <button type="button" class="secondary" on:click=remove>"Remove"</button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                    <button type="button" class="run-evals" prop:disabled=move || running.get() on:click=run>
                        {move || if running.get() { "Running the golden questions…" } else { "Run them against the active version" }}
                    </button>
                }.into_any(),
            }}
            <form class="golden-form" on:submit=add>
                <label>"Question" <input name="golden_question" bind:value=question required/></label>
                <label>"Expected facts (one per line)" <textarea name="expected_facts" rows="2" prop:value=move || facts.get() on:input=move |ev| facts.set(event_target_value(&ev))></textarea></label>
                <label><input type="checkbox" name="should_refuse" bind:checked=should_refuse/>" should be refused"</label>
                <button type="submit">"Add golden question"</button>
            </form>
        </div>
    }
}

/// The pinned answers, each checked against the index as it is listed.
#[component]
fn PinnedAnswers(notice: RwSignal<Option<(bool, String)>>) -> impl IntoView {
    let pins = RwSignal::new(None::<Result<Vec<PinView>, String>>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            pins.set(Some(client::get::<Vec<PinView>>(routes::PINS.url()).await));
        });
    });
    view! {
        <div class="panel pins">
            <h2>"Pinned answers"</h2>
            <p class="meta">"Served before the caches for their question and close paraphrases. A pin whose cited passage changed is flagged and stops serving until you pin it again from the Playground."</p>
            {move || match pins.get() {
                None => view! { <p class="loading">"Loading…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! { <p class="empty">"Nothing pinned. Pin an answer from the Playground, or from a content gap on the Dashboard."</p> }.into_any(),
                Some(Ok(list)) => view! {
                    <ul class="pinned-answers">
                        {list.into_iter().map(|p| {
                            let id = p.id.clone();
                            let remove = move |_| {
                                let id = id.clone();
                                leptos::task::spawn_local(async move {
                                    match client::delete(&routes::PIN.at([&id])).await {
                                        Ok(()) => reload.update(|n| *n = n.wrapping_add(1)),
                                        Err(message) => notice.set(Some((false, message))),
                                    }
                                });
                            };
                            let flagged = p.flagged_at.is_some();
                            view! {
                                <li class="pin" data-question=p.question.clone() data-flagged=flagged.to_string()>
                                    <strong>{p.question.clone()}</strong>
                                    {p.flag_reason.clone().map(|why| view! { <span class="badge warn">{format!("flagged for review: {why}")}</span> })}
                                    {(p.audience != "everyone").then(|| view! { <span class="badge audience">{format!("served to {}", p.audience.replace(',', ", "))}</span> })}
                                    <p>{p.answer.clone()}</p>
                                    <span class="meta">{format!("{} citations · {} · {}", p.citations.len(), p.created_by, p.created_at)}</span>
                                    <button type="button" class="secondary" on:click=remove>"Remove"</button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
        </div>
    }
}

/// A snapshot as text: the prompt as written, line by line (so a diff shows
/// the lines that changed), then the settings as JSON.
fn pretty(snapshot: &ProfileSnapshot) -> String {
    let mut settings = snapshot.clone();
    let prompt = std::mem::take(&mut settings.prompt);
    format!("{prompt}\n\n{}", serde_json::to_string_pretty(&settings).unwrap_or_default())
}

/// A line diff (longest common subsequence): `' '` same, `'-'` only in
/// `old`, `'+'` only in `new`.
pub fn diff_lines(old: &str, new: &str) -> Vec<(char, String)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((' ', a[i].to_owned()));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(('-', a[i].to_owned()));
            i += 1;
        } else {
            out.push(('+', b[j].to_owned()));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', (*l).to_owned())));
    out.extend(b[j..].iter().map(|l| ('+', (*l).to_owned())));
    out
}
