//! Judging under way: each candidate the eval gate is judging now (a
//! prompt save, a tuning change, a model binding), with its live progress,
//! polled each second while a screen that can start one is open. Shown on
//! the Prompt, Providers and Advanced tuning screens; nothing is shown when
//! nothing is being judged.

use leptos::prelude::*;

use crate::client;
use crate::routes;
use crate::wire::JudgingView;

#[component]
pub(crate) fn JudgingUnderWay() -> impl IntoView {
    let under_way = RwSignal::new(Vec::<JudgingView>::new());
    let tick = RwSignal::new(0u32);
    Effect::new(move |_| {
        tick.track();
        leptos::task::spawn_local(async move {
            // A failed poll keeps what was shown; the next one tries again.
            if let Ok(list) = client::get::<Vec<JudgingView>>(routes::PROFILE_JUDGING.url()).await {
                if under_way.get_untracked() != list {
                    under_way.set(list);
                }
            }
        });
    });
    super::tick_each_second(tick);
    move || {
        let list = under_way.get();
        (!list.is_empty()).then(|| {
            view! {
                <div class="panel judging" aria-live="polite">
                    <h2>"Being judged by the golden questions"</h2>
                    <p class="meta">"A candidate serves only once it answers them no worse than the active version."</p>
                    <ul>
                        {list.into_iter().map(|j| {
                            let heading = match j.version {
                                Some(version) => format!("{} (version {version})", j.what),
                                None => j.what.clone(),
                            };
                            view! {
                                <li class="judging-item" data-step=j.step.clone() data-done=j.done.to_string() data-total=j.total.to_string()>
                                    <p><strong>{heading}</strong>{format!(" — asked by {} at {}", j.by, j.started_at)}</p>
                                    <progress max=j.total.max(1).to_string() value=j.done.to_string()></progress>
                                    <p class="meta">{j.describe()}</p>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                </div>
            }
        })
    }
}
