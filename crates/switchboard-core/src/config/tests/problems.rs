//! Every kind of problem, each with its exact `line:column`, and several at once.

use super::*;

/// Asserts the exact problems, in order, as (line, column, message fragment).
fn check(text: &str, format: Format, expected: &[(usize, usize, &str)]) {
    let errors = match Config::parse(text, Origin::Inline, format, &env()) {
        Ok(config) => panic!("expected problems in\n{text}\ngot {config:?}"),
        Err(errors) => errors,
    };
    let found: Vec<(usize, usize, &str)> = errors
        .0
        .iter()
        .map(|p| (p.line, p.column, p.message.as_str()))
        .collect();
    assert_eq!(found.len(), expected.len(), "{text}\n---\n{errors}");
    for (found, expected) in found.iter().zip(expected) {
        assert_eq!(
            (found.0, found.1),
            (expected.0, expected.1),
            "{text}\n---\n{errors}"
        );
        assert!(
            found.2.contains(expected.2),
            "'{}' lacks '{}'",
            found.2,
            expected.2
        );
    }
}

pub(super) fn toml(text: &str, expected: &[(usize, usize, &str)]) {
    check(text, Format::Toml, expected);
}

pub(super) fn json(text: &str, expected: &[(usize, usize, &str)]) {
    check(text, Format::Json, expected);
}

#[test]
fn syntax_errors() {
    toml("[servers\n", &[(1, 9, "TOML syntax error")]);
    toml("a = \n", &[(1, 5, "TOML syntax error")]);
    json(
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"\n  }\n",
        &[(5, 1, "JSON syntax error")],
    );
    json("{\"a\": 1 \"b\": 2}", &[(1, 9, "expected ','")]);
    json(
        "{\"mcpServers\": {}, \"mcpServers\": {}}",
        &[(1, 20, "duplicate key")],
    );
    json("[1, 2]", &[(1, 1, "must be a table/object")]);
}

/// An integer past 64 bits was read as null: "max_connections must be an integer of at
/// least 1, found null" for `max_connections = 99999999999999999999`.
#[test]
fn an_integer_past_64_bits_is_named_where_it_was_written() {
    toml(
        "[gateway]\nmax_connections = 99999999999999999999\n",
        &[(
            2,
            19,
            "the integer 99999999999999999999 does not fit in 64 bits",
        )],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nargs = [\"-n\"]\ninstances = [1, -99_999_999_999_999_999_999]\n",
        &[(
            4,
            17,
            "the integer -99_999_999_999_999_999_999 does not fit",
        )],
    );
    let lowest = Config::parse(
        "[gateway]\nmax_connections = -9223372036854775808\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    );
    let problems = lowest
        .err()
        .map(|errors| errors.to_string())
        .unwrap_or_default();
    assert!(
        problems.contains("found -9223372036854775808") || problems.contains("at least 1"),
        "the lowest 64-bit integer is an integer: {problems}"
    );
}

/// A count out of range said only its kind: "max_tasks must be a positive integer, found an
/// integer" for `max_tasks = -5`.
#[test]
fn a_count_out_of_range_says_the_number_it_found() {
    toml(
        "[gateway.tasks]\nmax_tasks = -5\n",
        &[(2, 13, "max_tasks must be a positive integer, found -5")],
    );
    toml(
        "[gateway.sandbox]\nfiles = 0\n",
        &[(2, 9, "files must be a positive integer, found 0")],
    );
}

/// A file with a byte that is not UTF-8 was refused as "cannot read the config file: stream
/// did not contain valid UTF-8", with no place: it is located like any other problem now.
#[test]
fn a_byte_that_is_not_utf8_is_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    std::fs::write(&path, b"[servers.a]\ncommand = \"ab\xffc\"\n").expect("write");
    let errors = Config::load(&path, &env()).expect_err("refused");
    let problem = errors.0.first().expect("a problem");
    assert_eq!((problem.line, problem.column), (2, 14), "{errors}");
    assert!(problem.message.contains("not UTF-8"), "{errors}");
    assert!(problem.message.contains("0xFF"), "{errors}");
}

#[test]
fn unknown_keys_with_hints() {
    toml(
        "[gateway]\nseparatr = \"_\"\n",
        &[(2, 1, "unknown key 'separatr' in [gateway]")],
    );
    toml(
        "[server.a]\ncommand = \"x\"\n",
        &[(1, 2, "unknown key 'server'")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\n  argz = []\n",
        &[(3, 3, "unknown key 'argz' in servers.a")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\n[servers.a.tools.t]\nhide = true\n",
        &[(4, 1, "unknown key 'hide' in servers.a.tools.t")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"arg\": []}}}",
        &[(1, 39, "unknown key 'arg'")],
    );
    json("{}", &[(1, 1, "no servers")]);
    let errors = Config::parse(
        "[servers.a]\ncomand = \"x\"\n",
        "f.toml",
        Format::Toml,
        &env(),
    )
    .expect_err("typo");
    let text = errors.to_string();
    assert!(
        text.contains(
            "f.toml:2:1: unknown key 'comand' in servers.a\n  hint: did you mean 'command'?"
        ),
        "{text}"
    );
}

#[test]
fn wrong_types() {
    toml(
        "[gateway]\nprefix_tools = \"yes\"\n",
        &[(2, 16, "must be true or false, found a string")],
    );
    toml(
        "[gateway]\nmax_message_bytes = 10\n",
        &[(2, 21, "at least 1024")],
    );
    toml(
        "[gateway]\nbusy_poll = \"1s\"\n",
        &[(2, 13, "gateway.busy_poll must be at most 10ms")],
    );
    toml(
        "[gateway]\nmax_connections = 0\nheader_timeout = \"later\"\n",
        &[
            (
                2,
                19,
                "gateway.max_connections must be an integer of at least 1, found 0",
            ),
            (3, 18, "gateway.header_timeout is not a duration"),
        ],
    );
    toml(
        "[gateway]\nbusy_poll = \"soon\"\n",
        &[(2, 13, "gateway.busy_poll is not a duration")],
    );
    toml(
        "gateway = 3\n",
        &[(1, 11, "gateway must be a table/object, found an integer")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nargs = \"-v\"\n",
        &[(3, 8, "must be an array of strings")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nargs = [\"a\", 2]\n",
        &[(3, 14, "args[1] must be a string, found an integer")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nenv = { A = 1 }\n",
        &[(3, 13, "env.A must be a string")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nenabled = 1\n",
        &[(3, 11, "must be true or false")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"command\": 3}}}",
        &[(1, 34, "command must be a string")],
    );
    json(
        "{\"servers\": 3}",
        &[(1, 13, "must be a table/object or an array")],
    );
    json(
        "{\"servers\": [{\"command\": \"x\"}]}",
        &[(1, 14, "has no \"id\"")],
    );
    json(
        "{\"servers\": [{\"id\": 7, \"command\": \"x\"}]}",
        &[(1, 21, "id must be a string")],
    );
}

#[test]
fn transports() {
    toml(
        "[servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
        &[(
            3,
            1,
            "more than one of \"command\", \"url\" and \"builtin\"",
        )],
    );
    toml(
        "[servers.a]\nprefix = \"p\"\n",
        &[(1, 1, "needs one of \"command\"")],
    );
    json("{\"mcpServers\": {\"a\": {}}}", &[(1, 22, "needs one of")]);
    toml(
        "[servers.a]\ncommand = \"  \"\n",
        &[(2, 11, "servers.a.command is empty")],
    );
    toml(
        "[servers.a]\nurl = \"ftp://h\"\n",
        &[(2, 7, "must start with http:// or https://")],
    );
    toml(
        "[servers.a]\nurl = \"localhost:8000\"\n",
        &[(2, 7, "must start with http://")],
    );
    toml(
        "[servers.a]\nurl = \"https:///mcp\"\n",
        &[(2, 7, "has no host")],
    );
    toml(
        "[servers.a]\nbuiltin = \"clok\"\n",
        &[(2, 11, "unknown built-in 'clok'")],
    );
    toml(
        "[servers.a]\nurl = \"http://h\"\ntransport = \"websocket\"\n",
        &[(3, 13, "transport 'websocket' does not go with \"url\"")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ntransport = \"sse\"\n",
        &[(3, 13, "transport 'sse' does not go with \"command\"")],
    );
    toml(
        "[servers.a]\nurl = \"http://h\"\nargs = [\"x\"]\n",
        &[(3, 1, "args is for stdio servers")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nheaders = {}\n",
        &[(3, 1, "headers is for HTTP servers")],
    );
}

#[test]
fn names_and_values() {
    toml(
        "[servers.\"a b\"]\nbuiltin = \"clock\"\n",
        &[(1, 10, "server id 'a b' is not allowed")],
    );
    let long = "x".repeat(65);
    toml(
        &format!("[servers.{long}]\nbuiltin = \"clock\"\n"),
        &[(1, 10, "is not allowed")],
    );
    check_ok(
        &format!("[servers.{}]\nbuiltin = \"clock\"\n", &long[1..]),
        Format::Toml,
    );
    toml(
        "[gateway]\nseparator = \"\"\n",
        &[(2, 13, "separator '' is not allowed")],
    );
    toml(
        "[gateway]\nseparator = \"::\"\n",
        &[(2, 13, "separator '::' is not allowed")],
    );
    toml(
        "[servers.a]\nbuiltin = \"clock\"\nprefix = \"a/b\"\n",
        &[(3, 10, "prefix 'a/b'")],
    );
    toml(
        "[servers.a]\nbuiltin = \"clock\"\nera = \"2025\"\n",
        &[(3, 7, "era '2025' is not known")],
    );
    toml(
        "[servers.a]\nbuiltin = \"clock\"\ncall_timeout = \"soon\"\n",
        &[(3, 16, "not a duration")],
    );
    toml(
        "[gateway]\nconnect_timeout = -5\n",
        &[(2, 19, "not a duration")],
    );
    toml(
        "[servers.a]\nbuiltin = \"clock\"\n[servers.a.tools.t]\nname = \"\"\n",
        &[(4, 8, "tools.t.name is empty")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}, \"servers\": {\"a\": {\"command\": \"y\"}}}",
        &[(1, 53, "server id 'a' is used twice")],
    );
}

#[test]
fn unset_variables_point_at_the_reference() {
    toml(
        "[servers.a]\ncommand = \"${NOPE}\"\n",
        &[(2, 12, "NOPE is not set")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nargs = [\"$$\", \"a $$ ${NOPE}\"]\n",
        &[(3, 21, "args[1]: environment variable NOPE is not set")],
    );
    // An escape before the reference does not shift the column.
    toml(
        "[servers.a]\ncommand = \"\\t${NOPE}\"\n",
        &[(2, 14, "NOPE")],
    );
    // In a multi-line string the reference's own line is reported.
    toml(
        "[servers.a]\ncommand = \"\"\"\nx\n  ${NOPE}\"\"\"\n",
        &[(4, 3, "NOPE")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"url\": \"http://${HOST}/\"}}}",
        &[(1, 38, "HOST is not set")],
    );
    toml(
        "[servers.a]\ncommand = \"${bad name}\"\n",
        &[(2, 12, "not a valid variable reference")],
    );
    toml(
        "[servers.a]\ncommand = \"${OPEN\"\n",
        &[(2, 12, "unclosed")],
    );
    // References do not nest: the first `}` ends one, so a nested one is refused, not copied
    // through as text.
    toml(
        "[servers.a]\ncommand = \"${A:-${B}}\"\n",
        &[(2, 12, "references do not nest")],
    );
    // VS Code's own variables are VS Code's to fill; its `inputs` are left to it.
    json(
        "{\"inputs\": [{\"id\": \"key\", \"type\": \"promptString\"}], \"servers\": {\"a\": {\"command\": \"${input:key}\"}}}",
        &[(1, 83, "a VS Code variable the gateway cannot fill")],
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    toml(
        "[gateway]\nseparatr = \"_\"\ncall_timeout = \"fast\"\n\n[servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n\n[servers.b]\nbuiltin = \"clok\"\ncall_timeout = \"soon\"\n\n[servers.c]\ncommand = \"${NOPE}\"\nera = \"new\"\n",
        &[
            (2, 1, "unknown key 'separatr'"),
            (3, 16, "gateway.call_timeout is not a duration"),
            (7, 1, "more than one"),
            (10, 11, "unknown built-in 'clok'"),
            (11, 16, "not a duration"),
            (14, 12, "NOPE is not set"),
            (15, 7, "era 'new'"),
        ],
    );
    json(
        "{\n  \"mcpServers\": {\n    \"a b\": {\"command\": 3},\n    \"ok\": {\"command\": \"x\"},\n    \"c\": {\"url\": \"ftp://x\", \"tols\": {}}\n  }\n}",
        &[
            (3, 5, "server id 'a b'"),
            (3, 24, "must be a string"),
            (5, 29, "unknown key 'tols'"),
            (5, 18, "must start with http"),
        ],
    );
}

#[test]
fn display_lists_every_problem_with_its_hint() {
    let errors = ConfigErrors(vec![
        Problem::new(
            "c.toml",
            2,
            1,
            "unknown key 'comand'",
            Some("did you mean 'command'?".into()),
        ),
        Problem::new("c.toml", 5, 7, "bad", None),
        Problem::new("c.toml", 0, 0, "cannot read", None),
    ]);
    assert_eq!(
        errors.to_string(),
        "c.toml:2:1: unknown key 'comand'\n  hint: did you mean 'command'?\nc.toml:5:7: bad\nc.toml: cannot read"
    );
}

#[test]
fn builtin_settings_problems() {
    toml(
        "[servers.a]\nbuiltin = \"dice\"\nroots = [\"x\"]\n",
        &[(
            3,
            1,
            "servers.a.roots is a setting of the 'files' built-in, but this one is builtin = \"dice\"",
        )],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ndatabase = \"m.db\"\n",
        &[(
            3,
            1,
            "servers.a.database is a setting of the 'memory', 'rules' and 'sessions' built-ins, but this server is not a built-in",
        )],
    );
    toml(
        "[servers.a]\nbuiltin = \"files\"\nroots = [\"ok\", 3, { read_only = true }, { path = \"p\", ro = 1 }]\nmax_read_bytes = 0\n",
        &[
            (
                3,
                16,
                "servers.a.roots[1] must be a path or { path, read_only }, found an integer",
            ),
            (3, 19, "servers.a.roots[2] has no \"path\""),
            (3, 55, "unknown key 'ro' in servers.a.roots[3]"),
            (
                4,
                18,
                "servers.a.max_read_bytes must be an integer of at least 1, found 0",
            ),
        ],
    );
    toml(
        "[servers.a]\nbuiltin = \"dice\"\nseed = -1\ntables_dir = \"\"\n",
        &[
            (
                3,
                8,
                "servers.a.seed must be an integer of at least 0, found -1",
            ),
            (4, 14, "servers.a.tables_dir is empty"),
        ],
    );
}

#[test]
fn agent_problems() {
    toml(
        "[agents.npc]\nallow = \"dice__*\"\ncapabilities = [\"read_memry\"]\nexposure = \"lazy\"\nmax_listing_tokens = 0\ncolour = 1\n\n[capabilities]\nread_memory = [\"memory__search_*\"]\n",
        &[
            (2, 9, "agents.npc.allow must be an array of strings"),
            (3, 17, "agents.npc names unknown capability 'read_memry'"),
            (4, 12, "agents.npc.exposure 'lazy' is not known"),
            (
                5,
                22,
                "agents.npc.max_listing_tokens must be a positive integer",
            ),
            (6, 1, "unknown key 'colour' in agents.npc"),
        ],
    );
    toml(
        "[agents.\"n p c\"]\n",
        &[(1, 9, "agent name 'n p c' is not allowed")],
    );
}

/// Values that parse but that no limiter could apply: a rate too slow to schedule, a quota
/// window of zero (which would count nothing) or of more than a year.
#[test]
fn limit_values_out_of_range() {
    toml(
        "[agents.a]\nlimits = { per_minute = 1e-300, burst = 4294967295 }\nquota = { cost = 1, window = \"0\" }\n\n[agents.b]\nquota = { cost = 1, window = \"9000h\" }\n",
        &[
            (
                2,
                25,
                "agents.a.limits.per_minute must be a number of at least 0.0001",
            ),
            (
                3,
                30,
                "agents.a.quota.window must be between 1s and 8760h (365 days), found 0s",
            ),
            (
                6,
                30,
                "agents.b.quota.window must be between 1s and 8760h (365 days), found 32400000s",
            ),
        ],
    );
}

#[test]
fn limit_problems() {
    toml(
        "[gateway]\nlimits = { per_minute = 0, burts = 2, queue = \"soon\" }\n\n[agents.a]\nquota = { window = \"1h\" }\n\n[servers.s]\nbuiltin = \"clock\"\ncost = -1\n",
        &[
            (
                2,
                25,
                "gateway.limits.per_minute must be a number of at least 0.0001 (a call about every week), found 0",
            ),
            (2, 28, "unknown key 'burts' in gateway.limits"),
            (2, 47, "gateway.limits.queue is not a duration"),
            (5, 9, "agents.a.quota needs \"cost\""),
            (
                9,
                8,
                "servers.s.cost must be a number of at least 0, found -1",
            ),
        ],
    );
}

#[test]
fn hook_problems() {
    toml(
        "[[hooks]]\nevent = \"before\"\ncommand = \"x\"\n\n[[hooks]]\ncommand = \"y\"\non_failure = \"maybe\"\ntimout = \"1s\"\n",
        &[
            (2, 9, "hooks[0].event 'before' is not known"),
            (7, 14, "hooks[1].on_failure 'maybe' is not known"),
            (8, 1, "unknown key 'timout' in hooks[1]"),
            (5, 1, "hooks[1] needs \"event\""),
        ],
    );
}

#[test]
fn tiers_need_names_and_ceilings_of_their_own() {
    toml(
        "[tiers]\nvoice = \"300ms\"\nchat = \"300ms\"\nVoice = \"1s\"\nnone = \"0s\"\nbatch = \"10s\"\n",
        &[
            (
                3,
                8,
                "tiers.chat has the same ceiling as tier 'voice' (300ms)",
            ),
            (
                4,
                1,
                "tier 'voice' is defined twice (tier names ignore case)",
            ),
            (5, 8, "tiers.none is zero: no call fits a tier of no time"),
        ],
    );
}

#[test]
fn tier_problems() {
    toml(
        "[agents.npc]\ntier = \"fsat\"\n\n[tiers]\nfast = \"soon\"\nslow = \"2s\"\n\n[latency]\nquantile = \"p42\"\nwindow = 10\nmin_samples = 20\n",
        &[
            (5, 8, "tiers.fast is not a duration"),
            (9, 12, "latency.quantile 'p42' is not known"),
            (
                8,
                1,
                "latency.min_samples (20) is larger than latency.window (10)",
            ),
            (2, 8, "agent 'npc' names unknown tier 'fsat'"),
        ],
    );
}

#[test]
fn latency_keys_are_checked_where_they_are_written() {
    toml(
        "[latency]\nmax_attempts = \"3\"\nmask_after = \"soon\"\nhedging = 1\n",
        &[
            (2, 16, "latency.max_attempts"),
            (3, 14, "latency.mask_after"),
            (4, 11, "latency.hedging"),
        ],
    );
    toml(
        "[servers.s]\ncommand = \"x\"\n[servers.s.tools.t]\nprobe_arguments = 3\nprobe = \"no\"\n",
        &[
            (4, 19, "probe_arguments must be a table, not an integer"),
            (5, 9, "probe"),
        ],
    );
}

#[test]
fn manager_problems() {
    toml(
        "[manager]\nregistrys = []\nregistries = [\"ftp://x\", 3, \"https://\"]\ncatalogs = \"one.json\"\nactivation = \"manual\"\nmax_concurrent = 0\ninstall_dir = \"\"\nregistry_ttl = \"soon\"\napproval_timeout = \"1 fortnight\"\ntrust = \"blind\"\n",
        &[
            (2, 1, "unknown key 'registrys' in [manager]"),
            (
                3,
                15,
                "manager.registries[0] 'ftp://x' must start with http:// or https://",
            ),
            (
                3,
                26,
                "manager.registries[1] must be a string, found an integer",
            ),
            (3, 29, "manager.registries[2] 'https://' has no host"),
            (
                4,
                12,
                "manager.catalogs must be an array of paths, found a string",
            ),
            (5, 14, "manager.activation 'manual' is not known"),
            (6, 18, "manager.max_concurrent must be a positive integer"),
            (7, 15, "manager.install_dir is empty"),
            (8, 16, "manager.registry_ttl is not a duration"),
            (9, 20, "manager.approval_timeout is not a duration"),
            (10, 9, "trust 'blind' is not known"),
        ],
    );
    toml(
        "[manager]\nsandbox = \"yes\"\nallow_private_remotes = 1\n\n[manager.energy]\n",
        &[
            (
                2,
                11,
                "manager.sandbox must be a table, true or false, found a string",
            ),
            (3, 25, "manager.allow_private_remotes must be"),
        ],
    );
    toml(
        "[manager]\nsandbox = { mem = 1, network = \"some\" }\n",
        &[
            (2, 13, "unknown key 'mem' in [manager.sandbox]"),
            (2, 32, "manager.sandbox.network must be"),
        ],
    );
    toml(
        "[manager.energy]\nper_second = -1\nsearch = [50, 20]\ninstall = [1]\nadd = \"5..10\"\ntest = [-1, \"x\"]\nmodfy = [2, 5]\n",
        &[
            (
                2,
                14,
                "manager.energy.per_second must be a number of at least 0, found -1",
            ),
            (
                3,
                10,
                "manager.energy.search: min (50) is larger than max (20)",
            ),
            (
                4,
                11,
                "manager.energy.install must be two numbers [min, max], found 1 item",
            ),
            (
                5,
                7,
                "manager.energy.add must be two numbers [min, max], found a string",
            ),
            (
                6,
                9,
                "manager.energy.test[0] must be a number of at least 0, found -1",
            ),
            (
                6,
                13,
                "manager.energy.test[1] must be a number of at least 0, found a string",
            ),
            (7, 1, "unknown key 'modfy' in [manager.energy]"),
        ],
    );
    json(
        "{\"mcpServers\": {},\n \"manager\": {\"energy\": 3, \"max_concurent\": 2}}",
        &[
            (
                2,
                24,
                "manager.energy must be a table/object, found an integer",
            ),
            (2, 27, "unknown key 'max_concurent' in [manager]"),
        ],
    );
    let errors = Config::parse(
        "[manager]\nmax_concurent = 2\n[manager.energy]\nserch = [1, 2]\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect_err("misspelled");
    let hints: Vec<&str> = errors.0.iter().filter_map(|p| p.hint.as_deref()).collect();
    assert_eq!(
        hints,
        ["did you mean 'max_concurrent'?", "did you mean 'search'?"],
        "{errors}"
    );
}

/// A value substituted into a URL (from the environment or the secrets file) never reaches a
/// problem's text: messages are logged, kept for `status` and recorded in the ledger.
#[test]
fn problems_never_show_a_urls_secrets() {
    let env = MapEnvironment(std::collections::BTreeMap::from([(
        "API_KEY".to_owned(),
        "s3cr3t-value".to_owned(),
    )]));
    let text = "[servers.a]\nurl = \"http://10.0.0.5/mcp?api_key=${API_KEY}\"\ntls = { ca = \"ca.pem\" }\n\n[servers.b]\nurl = \"ftp://user:${API_KEY}@h/x\"\n";
    let errors = Config::parse(text, Origin::Inline, Format::Toml, &env).expect_err("invalid");
    let shown = errors.to_string();
    assert_eq!(shown.matches("[redacted]").count(), 2, "{shown}");
    assert!(!shown.contains("s3cr3t-value"), "{shown}");
}
