//! Screens whose features arrive with later work. Each says plainly what it
//! will hold; none shows invented data.

use leptos::prelude::*;

#[component]
fn NotYetAvailable(title: &'static str, purpose: &'static str) -> impl IntoView {
    view! {
        <section class="screen">
            <h1>{title}</h1>
            <p class="empty">{purpose}</p>
            <p class="empty">"This screen is not available in this build of Lore yet."</p>
        </section>
    }
}

#[component]
pub fn SetupWizard() -> impl IntoView {
    view! {
        <NotYetAvailable
            title="Setup wizard"
            purpose="Choose a persona, add the first source and a provider, run the first index and ask the first question."
        />
    }
}

#[component]
pub fn Tuning() -> impl IntoView {
    view! {
        <NotYetAvailable
            title="Advanced tuning"
            purpose="Embedding model, chunking, retrieval cutoff and weights, semantic-cache gates and source volatility."
        />
    }
}
