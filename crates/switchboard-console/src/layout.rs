//! The page shell every console page shares: the head (the console's own stylesheet and
//! script, the session's CSRF token in a `meta` for the script's requests), the navigation
//! between the pages, who is signed in, and the sign-out button.

use maud::{DOCTYPE, Markup, html};

use crate::auth::Session;

/// The pages, in the navigation's order: (path, title).
const PAGES: [(&str, &str); 7] = [
    ("/console/approvals", "Approvals"),
    ("/console/servers", "Servers"),
    ("/console/tools", "Tools"),
    ("/console/audit", "Audit"),
    ("/console/agents", "Agents"),
    ("/console/operations", "Operations"),
    ("/console/tasks", "Tasks"),
];

/// A page for a signed-in operator; `current` is its path in [`PAGES`].
pub(crate) fn page(session: &Session, current: &str, title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, Some(session)))
            body {
                header class="top" {
                    span class="brand" { "Switchboard" }
                    nav {
                        @for (path, name) in PAGES {
                            @if path == current {
                                a href=(path) aria-current="page" { (name) }
                            } @else {
                                a href=(path) { (name) }
                            }
                        }
                    }
                    form class="who" method="post" action="/console/sign-out" {
                        (csrf_field(session))
                        span { "signed in as " strong { (session.operator) } }
                        button type="submit" class="link" { "Sign out" }
                    }
                }
                main id="main" { h1 { (title) } (content) }
            }
        }
    }
}

/// A page with no session (sign-in, errors).
pub(crate) fn bare(title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, None))
            body { (content) }
        }
    }
}

/// The `head`: the stylesheet always; for a session, its CSRF token and the script.
fn head(title: &str, session: Option<&Session>) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            @if let Some(session) = session { meta name="csrf-token" content=(session.csrf); }
            title { (title) " · Switchboard console" }
            link rel="stylesheet" href="/console/static/console.css";
            @if session.is_some() { script src="/console/static/console.js" defer {} }
        }
    }
}

/// The hidden field that carries the session's CSRF token in a form.
pub(crate) fn csrf_field(session: &Session) -> Markup {
    html! { input type="hidden" name="_csrf" value=(session.csrf); }
}

/// A form that is one button: a POST to `action` with the session's CSRF token.
pub(crate) fn danger_button(session: &Session, action: &str, label: &str) -> Markup {
    html! {
        form method="post" action=(action) {
            (csrf_field(session))
            button type="submit" class="danger" { (label) }
        }
    }
}

/// A milliseconds figure as the tables show it.
pub(crate) fn ms(value: Option<f64>) -> String {
    match value {
        Some(ms) if ms >= 100.0 => format!("{ms:.0} ms"),
        Some(ms) => format!("{ms:.1} ms"),
        None => "—".to_owned(),
    }
}

/// A rate as a percentage.
pub(crate) fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "—".to_owned(), |rate| format!("{:.1} %", rate * 100.0))
}
