//! The setup wizard: persona → first source → provider → optional advanced →
//! first index → first question → done. Its state lives on the server
//! (`/admin/setup/`), so the wizard resumes at the step the admin left; each
//! step's POST validates and moves on, or says what is missing.

use leptos::prelude::*;

use super::providers::{model_placeholder, preset_label, ProviderPanels, EMBEDDED, EMBEDDED_NOTE};
use super::source_form::SourceForm;
use crate::client;
use crate::pages::playground::AnswerPanel;
use crate::routes;
use crate::wire::{
    AnswerResponse, AskRequest, CreateSourceRequest, JobView, NoBody, PersonaRequest, ProfileDetails,
    ProfileOverview, ProvidersOverview, QuickAddRequest, SetupWizardView, SourceView, UploadReceipt,
};

type Wizard = RwSignal<Option<SetupWizardView>>;
type Notice = RwSignal<Option<String>>;

fn title(step: &str) -> &'static str {
    match step {
        "persona" => "Persona",
        "source" => "First source",
        "provider" => "Provider",
        "advanced" => "Advanced (optional)",
        "index" => "First index",
        "question" => "First question",
        _ => "Done",
    }
}

/// POSTs a step and shows where the wizard is now, or what is missing.
fn post_step<B: serde::Serialize + 'static>(
    url: &'static str,
    body: B,
    wizard: Wizard,
    notice: Notice,
    busy: RwSignal<bool>,
) {
    busy.set(true);
    leptos::task::spawn_local(async move {
        match client::send::<_, SetupWizardView>("POST", url, &body).await {
            Ok(view) => {
                notice.set(None);
                wizard.set(Some(view));
            }
            Err(message) => notice.set(Some(message)),
        }
        busy.set(false);
    });
}

#[component]
pub fn SetupWizard() -> impl IntoView {
    let wizard: Wizard = RwSignal::new(None);
    let notice: Notice = RwSignal::new(None);
    let load_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            match client::get::<SetupWizardView>(routes::SETUP.url()).await {
                Ok(view) => wizard.set(Some(view)),
                Err(message) => load_error.set(Some(message)),
            }
        });
    });
    view! {
        <section class="screen setup">
            <h1>"Setup"</h1>
            {move || load_error.get().map(|m| view! { <p class="error">{m}</p> })}
            {move || wizard.get().map(|view| view! { <Stepper view/> })}
            {move || notice.get().map(|m| view! { <p class="flash error" role="alert">{m}</p> })}
            {move || wizard.get().map(|view| {
                let step = view.step.clone();
                view! {
                    <div class="panel wizard-step" data-step=step.clone()>
                        <h2>{title(&step)}</h2>
                        {match step.as_str() {
                            "persona" => view! { <PersonaStep wizard notice/> }.into_any(),
                            "source" => view! { <SourceStep view=view.clone() wizard notice/> }.into_any(),
                            "provider" => view! { <ProviderStep view=view.clone() wizard notice/> }.into_any(),
                            "advanced" => view! { <AdvancedStep view=view.clone() wizard notice/> }.into_any(),
                            "index" => view! { <IndexStep view=view.clone() wizard notice/> }.into_any(),
                            "question" => view! { <QuestionStep view=view.clone() wizard notice/> }.into_any(),
                            _ => view! { <Done answered=view.answered/> }.into_any(),
                        }}
                        {(step != "persona" && step != "complete").then(|| {
                            let busy = RwSignal::new(false);
                            view! {
                                <button type="button" class="secondary back"
                                    on:click=move |_| post_step(routes::SETUP_BACK.url(), NoBody {}, wizard, notice, busy)>
                                    "Back"
                                </button>
                            }
                        })}
                    </div>
                }
            })}
        </section>
    }
}

/// Where the wizard is: each step numbered, done ones ticked, the current
/// one marked for the eye and for assistive technology.
#[component]
fn Stepper(view: SetupWizardView) -> impl IntoView {
    let at = view.steps.iter().position(|s| *s == view.step).unwrap_or(0);
    let shown: Vec<(usize, String)> =
        view.steps.iter().cloned().enumerate().filter(|(_, step)| step != "complete").collect();
    let total = shown.len();
    let complete = view.step == "complete";
    view! {
        <nav class="stepper" aria-label="Setup steps">
            <p class="stepper-summary">
                {if complete {
                    "All steps done".to_owned()
                } else {
                    format!("Step {} of {total}: {}", (at + 1).min(total), title(&view.step))
                }}
            </p>
            <ol class="wizard-steps">
                {shown.into_iter().map(|(i, step)| {
                    let state = if i < at || complete { "done" } else if i == at { "current" } else { "todo" };
                    let marker = if state == "done" { "✓".to_owned() } else { (i + 1).to_string() };
                    view! {
                        <li class=state data-step=step.clone() aria-current=(state == "current").then_some("step")>
                            <span class="marker" aria-hidden="true">{marker}</span>
                            <span class="label">{title(&step)}</span>
                            <span class="visually-hidden">{match state { "done" => " (done)", "current" => " (current)", _ => "" }}</span>
                        </li>
                    }
                }).collect_view()}
            </ol>
        </nav>
    }
}

/// A persona's summary with its placeholders filled from what the admin
/// typed, or with neutral words until they type.
fn filled(summary: &str, organisation: &str, product: &str) -> String {
    let or = |typed: &str, neutral: &str| {
        let typed = typed.trim();
        if typed.is_empty() {
            neutral.to_owned()
        } else {
            typed.to_owned()
        }
    };
    summary
        .replace("{product}", &or(product, "your product"))
        .replace("{org}", &or(organisation, "your organisation"))
        .replace("{organisation}", &or(organisation, "your organisation"))
}

#[component]
fn PersonaStep(wizard: Wizard, notice: Notice) -> impl IntoView {
    let personas = RwSignal::new(Vec::new());
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            if let Ok(overview) = client::get::<ProfileOverview>(routes::PROFILE.url()).await {
                personas.set(overview.personas);
            }
        });
    });
    let persona = RwSignal::new("documentation_assistant".to_owned());
    let organisation = RwSignal::new(String::new());
    let product = RwSignal::new(String::new());
    let audience = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let optional = |s: RwSignal<String>| {
            let v = s.get().trim().to_owned();
            (!v.is_empty()).then_some(v)
        };
        let body = PersonaRequest {
            persona: persona.get(),
            details: ProfileDetails {
                organisation: optional(organisation),
                product: optional(product),
                audience: optional(audience),
                extra_instructions: None,
            },
        };
        post_step(routes::SETUP_PERSONA.url(), body, wizard, notice, busy);
    };
    view! {
        <form class="wizard-form persona-step" on:submit=submit>
            <p class="hint">"Lore answers as one persona; it sets the default prompt and behaviour. The details tailor the prompt."</p>
            <fieldset class="personas">
                <legend>"Persona"</legend>
                {move || personas.get().into_iter().map(|p| {
                    let key = p.key.clone();
                    let checked = key == persona.get_untracked();
                    let chosen = key.clone();
                    let summary = p.summary.clone();
                    view! {
                        <label class="persona" class:chosen=move || persona.get() == chosen>
                            <input type="radio" name="persona" value=key.clone() checked=checked
                                on:change=move |_| persona.set(key.clone())/>
                            <strong>{p.name}</strong>
                            <span class="summary">{move || filled(&summary, &organisation.get(), &product.get())}</span>
                        </label>
                    }
                }).collect_view()}
            </fieldset>
            <label>"Organisation (optional)" <input name="organisation" bind:value=organisation placeholder="Acme"/></label>
            <label>"Product (optional)" <input name="product" bind:value=product placeholder="Acme Cloud"/></label>
            <label>"Audience (optional)" <input name="audience" bind:value=audience placeholder="administrators"/></label>
            <div class="form-actions"><button type="submit" disabled=move || busy.get()>"Continue"</button></div>
        </form>
    }
}

#[component]
fn SourceStep(view: SetupWizardView, wizard: Wizard, notice: Notice) -> impl IntoView {
    let busy = RwSignal::new(false);
    let add = Callback::new(move |body: CreateSourceRequest| {
        post_step(routes::SETUP_SOURCE.url(), body, wizard, notice, busy);
    });
    let keep = view.source.clone().map(|source| {
        view! {
            <p class="existing">
                "The first source is " <strong>{source.name}</strong> ". "
                <button type="button" class="keep"
                    on:click=move |_| post_step(routes::SETUP_NEXT.url(), NoBody {}, wizard, notice, busy)>
                    "Keep it and continue"
                </button>
            </p>
        }
    });
    view! {
        {keep}
        <SourceForm class="wizard-form source-step" submit_label="Add the source" busy=busy on_submit=add
            hint="Where Lore's knowledge comes from. It is indexed two steps from now."/>
    }
}

#[component]
fn ProviderStep(view: SetupWizardView, wizard: Wizard, notice: Notice) -> impl IntoView {
    let presets = RwSignal::new(Vec::new());
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            if let Ok(overview) = client::get::<ProvidersOverview>(routes::PROVIDERS.url()).await {
                presets.set(overview.presets);
            }
        });
    });
    // The embedded model first: answers with no key and no other server.
    let kind = RwSignal::new(EMBEDDED.to_owned());
    let endpoint = RwSignal::new(String::new());
    let api_key = RwSignal::new(String::new());
    let model = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let remote = move || kind.get() != EMBEDDED;
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let filled = |field: RwSignal<String>| Some(field.get().trim().to_owned()).filter(|v| !v.is_empty());
        let embedded = kind.get() == EMBEDDED;
        let body = QuickAddRequest {
            kind: kind.get(),
            endpoint: if embedded { None } else { filled(endpoint) },
            api_key: if embedded { None } else { filled(api_key) },
            model: model.get().trim().to_owned(),
            name: None,
        };
        api_key.set(String::new());
        notice.set(None);
        post_step(routes::SETUP_PROVIDER.url(), body, wizard, notice, busy);
    };
    let keep = view.generation_model.clone().map(|model| {
        view! {
            <p class="existing">
                "Answers come from " <strong>{model}</strong> ". "
                <button type="button" class="keep"
                    on:click=move |_| post_step(routes::SETUP_NEXT.url(), NoBody {}, wizard, notice, busy)>
                    "Keep it and continue"
                </button>
            </p>
        }
    });
    view! {
        {keep}
        <form class="wizard-form provider-step" on:submit=submit>
            <p class="hint">"The model that writes answers: Lore stores the account (a key encrypted), registers the model, probes that it answers, and points answering at it. Nothing is stored if the probe fails."</p>
            <label>
                "Type"
                <select name="kind" prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                    {move || presets.get().into_iter().map(|p| {
                        view! { <option value=p.key.clone() selected=p.key == kind.get_untracked()>{preset_label(&p)}</option> }
                    }).collect_view()}
                </select>
            </label>
            <Show when=remote fallback=|| view! { <p class="hint embedded-note">{EMBEDDED_NOTE}</p> }>
                <label>"Endpoint" <input name="endpoint" bind:value=endpoint placeholder="http://127.0.0.1:8080/v1"/></label>
                <label>"API key" <input name="api_key" type="password" autocomplete="off" bind:value=api_key placeholder="Not needed for most on-node servers"/></label>
            </Show>
            <label>"Model" <input name="model" required=remote bind:value=model placeholder=move || model_placeholder(&kind.get())/></label>
            <div class="form-actions">
                <button type="submit" disabled=move || busy.get()>
                    {move || if busy.get() { "Probing…" } else { "Add, probe and use it" }}
                </button>
            </div>
        </form>
    }
}

#[component]
fn AdvancedStep(view: SetupWizardView, wizard: Wizard, notice: Notice) -> impl IntoView {
    let busy = RwSignal::new(false);
    view! {
        <p class="hint">
            "Optional: more connections, model targets for other jobs (embedding, escalation, rerank) and the role bindings, here or later on the Providers screen. Answers come from "
            <strong>{view.generation_model.unwrap_or_else(|| "nothing yet".into())}</strong> "."
        </p>
        <div class="wizard-providers"><ProviderPanels/></div>
        <div class="form-actions">
            <button type="button" class="continue"
                on:click=move |_| post_step(routes::SETUP_NEXT.url(), NoBody {}, wizard, notice, busy)>
                "Continue"
            </button>
        </div>
    }
}

#[component]
fn IndexStep(view: SetupWizardView, wizard: Wizard, notice: Notice) -> impl IntoView {
    let busy = RwSignal::new(false);
    let Some(source) = view.source.clone() else {
        return view! { <p class="error">"There is no first source: go back and add one."</p> }.into_any();
    };
    let start = move |_| post_step(routes::SETUP_INDEX.url(), NoBody {}, wizard, notice, busy);
    if source.kind == "upload" {
        let id = source.id.clone();
        let uploaded = RwSignal::new(0usize);
        let upload = move |_| {
            let url = routes::SOURCE_FILES.at([&id]);
            leptos::task::spawn_local(async move {
                match client::upload::<Vec<UploadReceipt>>(&url, "setup-files").await {
                    Ok(receipts) => uploaded.update(|n| *n += receipts.len()),
                    Err(message) => notice.set(Some(message)),
                }
            });
        };
        return view! {
            <div class="wizard-form upload-step">
                <p class="hint">"Upload the first files to " <strong>{source.name}</strong> " (Markdown, reStructuredText, AsciiDoc, text, HTML or PDF): uploading starts their indexing."</p>
                <label>"Files" <input id="setup-files" name="files" type="file" multiple/></label>
                <p class="uploaded" aria-live="polite">{move || format!("{} file(s) uploaded.", uploaded.get())}</p>
                <div class="form-actions">
                    <button type="button" class="upload secondary" on:click=upload>"Upload"</button>
                    <button type="button" class="start-index" disabled=move || busy.get() || uploaded.get() == 0 on:click=start>"Continue"</button>
                </div>
            </div>
        }
        .into_any();
    }
    view! {
        <p class="hint">
            "Index " <strong>{source.name}</strong>
            ". The profile is created from your persona as it starts; indexing goes on in the background and its progress shows on the next step and on the Sources screen."
        </p>
        <div class="form-actions">
            <button type="button" class="start-index" disabled=move || busy.get() on:click=start>"Start the first index"</button>
        </div>
    }
    .into_any()
}

#[component]
fn QuestionStep(view: SetupWizardView, wizard: Wizard, notice: Notice) -> impl IntoView {
    let question = RwSignal::new(String::new());
    let answer = RwSignal::new(None::<AnswerResponse>);
    let asking = RwSignal::new(false);
    let busy = RwSignal::new(false);
    // A question went through earlier (answered or refused): finishing is
    // offered at once, also after a reload.
    let asked = RwSignal::new(view.asked || view.answered);
    let job = RwSignal::new(view.job.clone());
    let source = RwSignal::new(view.source.clone());
    // Live indexing progress, polled each second while the source has a run
    // under way (an upload source may queue several while files arrive).
    let tick = RwSignal::new(0u32);
    Effect::new(move |_| {
        tick.track();
        let latest = source.get_untracked().and_then(|s| s.latest_job).or_else(|| job.get_untracked());
        if latest.is_some_and(|j| j.status == "queued" || j.status == "running") {
            leptos::task::spawn_local(async move {
                if let Ok(now) = client::get::<SetupWizardView>(routes::SETUP.url()).await {
                    job.set(now.job);
                    source.set(now.source);
                }
            });
        }
    });
    super::tick_each_second(tick);
    let ask = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = AskRequest { question: question.get() };
        asking.set(true);
        leptos::task::spawn_local(async move {
            match client::send::<_, AnswerResponse>("POST", routes::SETUP_ASK.url(), &body).await {
                Ok(answered) => {
                    notice.set(None);
                    answer.set(Some(answered));
                    asked.set(true);
                }
                Err(message) => notice.set(Some(message)),
            }
            asking.set(false);
        });
    };
    let finish = move |_| post_step(routes::SETUP_NEXT.url(), NoBody {}, wizard, notice, busy);
    view! {
        {move || {
            let latest = source.get().and_then(|s| s.latest_job.clone()).or_else(|| job.get());
            latest.map(|j| view! { <IndexProgress job=j source=source.get()/> })
        }}
        <form class="question-step" on:submit=ask>
            <label>"Ask a question your content answers"
                <textarea name="question" rows="2" required bind:value=question></textarea>
            </label>
            <button type="submit" disabled=move || asking.get()>"Ask"</button>
        </form>
        {move || answer.get().map(|answer| {
            let help = answer.refused.then(|| view! { <RefusalHelp answer=answer.clone()/> });
            view! { <AnswerPanel answer/> {help} }.into_any()
        })}
        {move || asked.get().then(|| view! {
            <div class="form-actions">
                <button type="button" class="finish" disabled=move || busy.get() on:click=finish>"Finish setup"</button>
            </div>
        }.into_any())}
    }
}

/// Why the first question was refused, read off its trace, and what to try:
/// a newcomer whose documents the small default model cannot answer learns
/// that this is the grounding check at work, not a broken install.
#[component]
fn RefusalHelp(answer: AnswerResponse) -> impl IntoView {
    let stage = |name: &str| answer.trace.stages.iter().find(|s| s.stage == name);
    let why = if stage("refusal").is_some() {
        "Nothing indexed matched the question closely enough, so no model was asked."
    } else if stage("grounding").is_some_and(|s| s.decision == "declined") {
        "Lore found passages, but the model said they do not answer the question."
    } else {
        "Lore found passages, but the model's answer said things they do not support, so Lore refused rather than guess."
    };
    view! {
        <div class="refusal-help" role="note">
            <p class="why"><strong>"Refused: "</strong>{why}</p>
            <p>"What to try:"</p>
            <ul>
                <li>"Another question, worded as your documents word it (the trace above shows the passages found)."</li>
                <li>"A stronger model: add one on the "<a href="/providers">"Providers"</a>" screen, for answering or for escalation when the first model's answer is refused."</li>
                <li>"The retrieval and grounding settings under "<a href="/tuning">"Advanced tuning"</a>"."</li>
            </ul>
            <p class="meta">"You can finish setup now: refused questions show as content gaps on the Dashboard, and Readiness says what still stops answers."</p>
        </div>
    }
}

/// The first index's progress, as the Sources screen counts it: the
/// source's latest run (documents against the documents it found, chunks
/// embedded against the chunks it made, each with its own bar) and the
/// source's totals, each labelled with what it counts. An upload source may
/// run several times while its files arrive, so a run's counts alone can
/// be a part of the source.
#[component]
fn IndexProgress(job: JobView, source: Option<SourceView>) -> impl IntoView {
    let p = job.progress;
    let documents = p.discovered.max(p.done);
    let chunks = p.chunked.max(p.embedded);
    let (in_source, chunks_in_source) = source.as_ref().map_or((0, 0), |s| (s.document_count, s.chunk_count));
    let name = source.as_ref().map_or_else(|| "The source".to_owned(), |s| s.name.clone());
    view! {
        <div class="index-progress" data-job-status=job.status.clone()
            data-documents-done=p.done data-documents=documents data-chunks-done=p.embedded data-chunks=chunks
            data-source-documents=in_source data-source-chunks=chunks_in_source>
            <p>{format!("Indexing, latest run: {}", job.status)}</p>
            <label>
                <span class="documents">{format!("This run: {} of {} documents", p.done, documents)}</span>
                <progress max=documents.max(1) value=p.done></progress>
            </label>
            <label>
                <span class="chunks">{format!("This run: {} of {} chunks embedded", p.embedded, chunks)}</span>
                <progress max=chunks.max(1) value=p.embedded></progress>
            </label>
            <p class="meta source-totals">
                {format!("{name} holds {in_source} documents in {chunks_in_source} chunks in all (as on the Sources screen).")}
            </p>
        </div>
    }
}

#[component]
fn Done(answered: bool) -> impl IntoView {
    let said = if answered {
        "Lore is set up and answering."
    } else {
        "Setup is finished. The first question was refused: Lore answers what its content supports, and the Dashboard's Readiness says what still stops answers."
    };
    view! {
        <p class="done" data-answered=answered.to_string()>{said}</p>
        <ul>
            <li><a href="/dashboard">"Dashboard"</a>": usage, cache, spend and content gaps."</li>
            <li><a href="/sources">"Sources"</a>": indexing progress and more content."</li>
            <li><a href="/access">"Access"</a>": keys for programs and the widget."</li>
        </ul>
    }
}
