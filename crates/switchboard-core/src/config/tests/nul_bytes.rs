//! A NUL byte in what a stdio server's child is started with — its command, an argument, an
//! environment key or value, its directory; a hook's command or argument — passed `config
//! check`, and the server then failed to start ("nul byte") on every retry: it is a problem at
//! its line and column.

use super::problems::{json, toml};

/// A format's check, a config text, and the problems expected in it.
type Case = (
    fn(&str, &[(usize, usize, &str)]),
    &'static str,
    &'static [(usize, usize, &'static str)],
);

const CASES: [Case; 5] = [
    (
        toml,
        "[servers.a]\ncommand = \"x\\u0000y\"\n",
        &[(2, 11, "a.command contains a NUL byte")],
    ),
    (
        toml,
        "[servers.a]\ncommand = \"x\"\nargs = [\"ok\", \"b\\u0000\"]\ncwd = \"/tmp/\\u0000\"\n",
        &[
            (3, 15, "a.args[1] contains a NUL byte"),
            (4, 7, "a.cwd contains a NUL byte"),
        ],
    ),
    (
        toml,
        "[servers.a]\ncommand = \"x\"\n[servers.a.env]\nGOOD = \"1\"\n\"K\\u0000\" = \"1\"\nV = \"1\\u0000\"\n",
        &[
            (5, 1, "a.env key \"K\\0\" contains a NUL byte"),
            (6, 5, "a.env.V contains a NUL byte"),
        ],
    ),
    (
        json,
        "{\"mcpServers\": {\"a\": {\"command\": \"x\\u0000y\"}}}",
        &[(1, 34, "a.command contains a NUL byte")],
    ),
    (
        toml,
        "[[hooks]]\nevent = \"pre_call\"\ncommand = \"h\\u0000\"\nargs = [\"\\u0000\"]\n",
        &[
            (3, 11, "hooks[0].command contains a NUL byte"),
            (4, 9, "hooks[0].args[0] contains a NUL byte"),
        ],
    ),
];

#[test]
fn a_nul_byte_in_what_starts_a_child_is_located() {
    for (check, text, expected) in CASES {
        check(text, expected);
    }
}
