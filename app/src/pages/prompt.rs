//! The Prompt screen: the persona and its details, the prompt and behaviour
//! editor, and the history of immutable profile versions (view, diff against
//! the active one, restore). A save names the version the editor started
//! from; if another admin activated a version meanwhile, the save is refused
//! and the screen says so instead of overwriting.

use leptos::prelude::*;

use crate::client;
use crate::wire::{
    PersonaRequest, ProfileDetails, ProfileOverview, ProfileSnapshot, ProfileVersionView, RestoreRequest,
    SaveProfileRequest,
};

#[component]
pub fn Prompt() -> impl IntoView {
    let overview = RwSignal::new(None::<Result<ProfileOverview, String>>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    Effect::new(move |_| {
        reload.track();
        leptos::task::spawn_local(async move {
            overview.set(Some(client::get::<ProfileOverview>("/admin/profile").await));
        });
    });
    let refresh = move || reload.update(|n| *n = n.wrapping_add(1));
    view! {
        <section class="screen prompt">
            <h1>"Prompt"</h1>
            {move || notice.get().map(|(ok, text)| view! { <p class={if ok { "flash ok" } else { "flash error" }} role="status">{text}</p> })}
            {move || match overview.get() {
                None => view! { <p class="loading">"Loading the profile…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
                Some(Ok(data)) => match data.active.clone() {
                    None => view! { <ChoosePersona data notice/> }.into_any(),
                    Some(active) => view! {
                        <Editor data=data.clone() active notice refresh/>
                        <History data notice refresh/>
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
            match client::send_no_content("PUT", "/admin/profile/persona", &body).await {
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
            match client::send::<_, ProfileSnapshot>("POST", "/admin/profile/render", &body).await {
                Ok(rendered) => {
                    prompt.set(rendered.prompt);
                    tone.set(rendered.behavior.tone);
                    length.set(rendered.behavior.length);
                    citation_style.set(rendered.behavior.citation_style);
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
            match client::send::<_, ProfileVersionView>("POST", "/admin/profile/versions", &body).await {
                Ok(saved) => {
                    conflict.set(None);
                    notice
                        .set(Some((true, format!("Saved as version {}; it is now active.", saved.version))));
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
                    let restore = move |_| {
                        // Versions are `i32` on the server; one that does not fit cannot be active.
                        let body = RestoreRequest {
                            expected_active: active_version.and_then(|active| i32::try_from(active).ok()),
                        };
                        leptos::task::spawn_local(async move {
                            match client::send::<_, ProfileVersionView>("POST", &format!("/admin/profile/versions/{number}/restore"), &body).await {
                                Ok(_) => {
                                    notice.set(Some((true, format!("Version {number} is active again."))));
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
                            <span class="meta">{format!(" {} · {}", v.created_at, v.created_by)}</span>
                            {v.note.clone().map(|n| view! { <span class="note">{format!(" — {n}")}</span> })}
                            <button type="button" class="secondary" on:click=move |_| shown.set(Some(("view".into(), view_v.clone())))>"View"</button>
                            {(!v.active).then(|| view! {
                                <button type="button" class="secondary" on:click=move |_| shown.set(Some(("diff".into(), diff_v.clone())))>"Diff with active"</button>
                                <button type="button" on:click=restore>"Restore"</button>
                            })}
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

#[cfg(test)]
mod tests {
    use super::diff_lines;

    #[test]
    fn the_diff_marks_changed_lines_only() {
        let diff = diff_lines("a\nb\nc", "a\nB\nc\nd");
        assert_eq!(
            diff,
            vec![
                (' ', "a".into()),
                ('-', "b".into()),
                ('+', "B".into()),
                (' ', "c".into()),
                ('+', "d".into())
            ]
        );
    }
}
