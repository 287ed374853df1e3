//! The files tools, and every escape attempt: relative `..`, absolute paths outside, a
//! symlink inside a root pointing out (read and write through it), a symlinked directory, and
//! symlinks swapped in after a first successful access — each refused, with a canary file
//! outside the root neither read nor changed.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{Value, json};

use super::*;

struct World {
    _temp: tempfile::TempDir,
    root: PathBuf,
    docs: PathBuf,
    outside: PathBuf,
    files: Files,
}

const CANARY: &str = "canary: do not touch";

fn world() -> World {
    let temp = tempfile::tempdir().expect("tempdir");
    let root = temp.path().join("root");
    let docs = temp.path().join("docs");
    let outside = temp.path().join("outside");
    for dir in [&root, &docs, &outside] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    std::fs::write(outside.join("secret.txt"), CANARY).expect("canary");
    std::fs::write(root.join("hello.txt"), "line 1\nline 2\nline 3\n").expect("hello");
    std::fs::write(docs.join("guide.md"), "read me").expect("guide");
    let files = Files::new(FilesSettings {
        roots: vec![
            Root {
                path: root.clone(),
                read_only: false,
            },
            Root {
                path: docs.clone(),
                read_only: true,
            },
        ],
        max_read_bytes: 1024,
        max_write_bytes: 256,
    })
    .expect("roots");
    World {
        _temp: temp,
        root,
        docs,
        outside,
        files,
    }
}

fn run(world: &World, tool: &str, arguments: Value) -> Result<ToolOutcome, String> {
    world
        .files
        .dispatch(tool, arguments.as_object().expect("object"))
}

fn refused(world: &World, tool: &str, arguments: Value) -> String {
    run(world, tool, arguments.clone()).expect_err(&format!("{tool} {arguments} must be refused"))
}

fn canary_intact(world: &World) {
    assert_eq!(
        std::fs::read_to_string(world.outside.join("secret.txt")).expect("canary"),
        CANARY
    );
    let entries = std::fs::read_dir(&world.outside).expect("outside").count();
    assert_eq!(entries, 1, "nothing was created outside the roots");
}

#[test]
fn read_write_edit_and_list() {
    let w = world();
    let read = run(&w, "read_file", json!({"path": "hello.txt"})).expect("read");
    assert_eq!(read.text_content(), "line 1\nline 2\nline 3\n");
    let tail = run(
        &w,
        "read_file",
        json!({"path": w.root.join("hello.txt").display().to_string(), "tail": 1}),
    )
    .expect("tail");
    assert_eq!(tail.text_content(), "line 3\n");
    assert_eq!(
        run(&w, "read_file", json!({"path": "hello.txt", "head": 2}))
            .expect("head")
            .text_content(),
        "line 1\nline 2\n"
    );
    let guide = w.docs.join("guide.md").display().to_string();
    assert_eq!(
        run(&w, "read_file", json!({"path": guide}))
            .expect("other root")
            .text_content(),
        "read me"
    );

    run(&w, "create_directory", json!({"path": "notes/2026"})).expect("mkdir");
    run(
        &w,
        "write_file",
        json!({"path": "notes/2026/a.txt", "content": "alpha\nbeta\n"}),
    )
    .expect("write");
    assert_eq!(
        std::fs::read_to_string(w.root.join("notes/2026/a.txt")).expect("written"),
        "alpha\nbeta\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(w.root.join("notes/2026"))
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temporary file is left behind: {leftovers:?}"
    );

    let dry = run(&w, "edit_file", json!({"path": "notes/2026/a.txt", "edits": [{"oldText": "beta", "newText": "gamma"}], "dryRun": true})).expect("dry");
    assert!(
        dry.text_content().contains("-beta\n+gamma"),
        "{}",
        dry.text_content()
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join("notes/2026/a.txt")).expect("unchanged"),
        "alpha\nbeta\n"
    );
    run(
        &w,
        "edit_file",
        json!({"path": "notes/2026/a.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}),
    )
    .expect("edit");
    assert_eq!(
        std::fs::read_to_string(w.root.join("notes/2026/a.txt")).expect("edited"),
        "alpha\ngamma\n"
    );
    // A diff longer than max_read_bytes (1024 here) is cut at a line's end, saying so; the
    // file is written whole.
    let long: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
    std::fs::write(w.root.join("long.txt"), &long).expect("long");
    let edited = run(
        &w,
        "edit_file",
        json!({"path": "long.txt", "edits": [{"oldText": long, "newText": "short\n"}]}),
    )
    .expect("edit")
    .text_content();
    assert!(edited.len() < 1100, "{} bytes", edited.len());
    assert!(
        edited.contains("-line 000\n")
            && edited.ends_with("bytes left out (max_read_bytes = 1024)\n"),
        "{edited}"
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join("long.txt")).expect("edited"),
        "short\n"
    );
    std::fs::write(w.root.join("twice.txt"), "x x").expect("twice");
    assert!(
        refused(
            &w,
            "edit_file",
            json!({"path": "twice.txt", "edits": [{"oldText": "x", "newText": "y"}]})
        )
        .contains("occurs 2 times")
    );
    assert!(
        refused(
            &w,
            "edit_file",
            json!({"path": "twice.txt", "edits": [{"oldText": "zz", "newText": "y"}]})
        )
        .contains("not found")
    );

    let listed = run(&w, "list_directory", json!({"path": "."}))
        .expect("list")
        .text_content();
    assert!(
        listed.contains("[DIR] notes") && listed.contains("[FILE] hello.txt"),
        "{listed}"
    );
    let tree = run(&w, "directory_tree", json!({"path": ".", "max_depth": 1})).expect("tree");
    assert_eq!(
        tree.structured_content.as_ref().expect("tree")["truncated"],
        true
    );
    let found = run(
        &w,
        "search_files",
        json!({"path": ".", "pattern": "*.txt", "content": "gamma"}),
    )
    .expect("search");
    let matches = found.structured_content.expect("matches")["matches"].clone();
    assert_eq!(
        matches,
        json!([w.root.join("notes/2026/a.txt").display().to_string()])
    );
    let info = run(&w, "get_file_info", json!({"path": "hello.txt"})).expect("info");
    assert_eq!(info.structured_content.as_ref().expect("info")["size"], 21);
    run(
        &w,
        "move_file",
        json!({"source": "twice.txt", "destination": "notes/moved.txt"}),
    )
    .expect("move");
    assert!(w.root.join("notes/moved.txt").exists() && !w.root.join("twice.txt").exists());
    assert!(
        refused(
            &w,
            "move_file",
            json!({"source": "hello.txt", "destination": "notes/moved.txt"})
        )
        .contains("already exists")
    );
    let roots = run(&w, "list_allowed_roots", json!({}))
        .expect("roots")
        .text_content();
    assert!(roots.contains("(read-only)"));
    let multi = run(
        &w,
        "read_multiple_files",
        json!({"paths": ["hello.txt", "missing.txt"]}),
    )
    .expect("multi");
    let files = multi.structured_content.expect("files")["files"].clone();
    assert_eq!(files[0]["content"], "line 1\nline 2\nline 3\n");
    assert!(
        files[1]["error"]
            .as_str()
            .expect("error")
            .contains("does not exist")
    );
}

#[test]
fn limits_read_only_roots_and_binary_files() {
    let w = world();
    std::fs::write(w.root.join("big.txt"), "x".repeat(2000)).expect("big");
    assert!(
        refused(&w, "read_file", json!({"path": "big.txt"}))
            .contains("over the read limit of 1024 bytes")
    );
    assert!(
        refused(
            &w,
            "write_file",
            json!({"path": "w.txt", "content": "y".repeat(300)})
        )
        .contains("over the write limit")
    );
    let guide = w.docs.join("guide.md").display().to_string();
    assert!(
        refused(&w, "write_file", json!({"path": guide, "content": "no"}))
            .contains("read-only root")
    );
    assert!(
        refused(
            &w,
            "create_directory",
            json!({"path": w.docs.join("sub").display().to_string()})
        )
        .contains("read-only")
    );
    assert_eq!(
        std::fs::read_to_string(w.docs.join("guide.md")).expect("guide"),
        "read me"
    );
    std::fs::write(
        w.root.join("image.png"),
        [0x89, b'P', b'N', b'G', 0, 1, 2, 0xff],
    )
    .expect("png");
    let image = run(&w, "read_file", json!({"path": "image.png"})).expect("binary");
    assert_eq!(image.content[0]["type"], "resource");
    assert_eq!(image.content[0]["resource"]["mimeType"], "image/png");
    assert_eq!(image.content[0]["resource"]["blob"], "iVBORwABAv8=");
    std::fs::write(w.root.join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).expect("latin1");
    let latin = run(&w, "read_file", json!({"path": "latin1.txt"})).expect("binary");
    assert_eq!(
        latin.content[0]["type"], "resource",
        "invalid UTF-8 is never mangled into text"
    );
}

#[test]
fn escapes_are_refused() {
    let w = world();
    let secret = w.outside.join("secret.txt").display().to_string();
    for path in [
        "../outside/secret.txt",
        "notes/../../outside/secret.txt",
        secret.as_str(),
        "/etc/passwd",
    ] {
        let message = refused(&w, "read_file", json!({"path": path}));
        assert!(
            message.contains("outside the allowed roots"),
            "{path}: {message}"
        );
        refused(&w, "write_file", json!({"path": path, "content": "pwned"}));
    }
    // A symlink inside the root that points out: neither read nor written through.
    symlink(w.outside.join("secret.txt"), w.root.join("link.txt")).expect("symlink");
    assert!(refused(&w, "read_file", json!({"path": "link.txt"})).contains("not accessible"));
    let written = run(
        &w,
        "write_file",
        json!({"path": "link.txt", "content": "pwned"}),
    );
    // Writing replaces the link itself (rename), never the file it points to.
    if written.is_ok() {
        assert!(
            !std::fs::symlink_metadata(w.root.join("link.txt"))
                .expect("meta")
                .file_type()
                .is_symlink()
        );
    }
    refused(
        &w,
        "edit_file",
        json!({"path": "link.txt", "edits": [{"oldText": "canary", "newText": "x"}]}),
    );
    // A symlinked directory pointing out.
    symlink(&w.outside, w.root.join("out")).expect("dir symlink");
    refused(&w, "read_file", json!({"path": "out/secret.txt"}));
    refused(
        &w,
        "write_file",
        json!({"path": "out/new.txt", "content": "pwned"}),
    );
    refused(&w, "list_directory", json!({"path": "out"}));
    refused(&w, "create_directory", json!({"path": "out/made"}));
    let search = run(
        &w,
        "search_files",
        json!({"path": ".", "pattern": "*secret*"}),
    )
    .expect("search");
    assert_eq!(
        search.structured_content.expect("matches")["matches"],
        json!([]),
        "walks do not follow links out"
    );
    canary_intact(&w);
}

#[test]
fn swapped_symlinks_after_a_check_are_refused() {
    let w = world();
    // A file first read fine, then replaced by a symlink to the outside.
    std::fs::write(w.root.join("swap.txt"), "fine").expect("swap");
    assert_eq!(
        run(&w, "read_file", json!({"path": "swap.txt"}))
            .expect("first")
            .text_content(),
        "fine"
    );
    std::fs::remove_file(w.root.join("swap.txt")).expect("rm");
    symlink(w.outside.join("secret.txt"), w.root.join("swap.txt")).expect("swap in");
    refused(&w, "read_file", json!({"path": "swap.txt"}));
    // A directory component replaced by a symlink to the outside between two calls.
    std::fs::create_dir(w.root.join("work")).expect("work");
    run(
        &w,
        "write_file",
        json!({"path": "work/a.txt", "content": "ok"}),
    )
    .expect("first write");
    std::fs::rename(w.root.join("work"), w.root.join("work.old")).expect("move away");
    symlink(&w.outside, w.root.join("work")).expect("swap dir");
    refused(
        &w,
        "write_file",
        json!({"path": "work/secret.txt", "content": "pwned"}),
    );
    refused(&w, "read_file", json!({"path": "work/secret.txt"}));
    refused(
        &w,
        "move_file",
        json!({"source": "hello.txt", "destination": "work/hello.txt"}),
    );
    canary_intact(&w);
}

#[test]
fn roots_must_exist() {
    let error = Files::new(FilesSettings {
        roots: vec![Root {
            path: Path::new("/nonexistent/root").to_owned(),
            read_only: false,
        }],
        ..FilesSettings::default()
    })
    .err()
    .expect("missing root");
    assert!(error.to_string().contains("/nonexistent/root"), "{error}");
    assert!(Files::new(FilesSettings::default()).is_err());
}

/// A read-only root inside a writable one could be written through it (by its path, or a
/// link made in the writable root): refused at start. A writable root inside a read-only one
/// is written as itself, however the path is written.
#[test]
fn nested_roots_are_taken_as_the_deepest_and_a_read_only_one_may_not_sit_in_a_writable_one() {
    let temp = tempfile::tempdir().expect("tempdir");
    let outer = temp.path().join("work");
    let inner = outer.join("docs");
    std::fs::create_dir_all(&inner).expect("mkdir");
    let root = |path: &Path, read_only| Root {
        path: path.to_owned(),
        read_only,
    };
    let settings = |roots| FilesSettings {
        roots,
        ..FilesSettings::default()
    };
    let error = Files::new(settings(vec![root(&outer, false), root(&inner, true)]))
        .err()
        .expect("a read-only root in a writable one");
    assert!(
        error.to_string().contains("inside the writable root"),
        "{error}"
    );

    let files = Files::new(settings(vec![root(&outer, true), root(&inner, false)])).expect("roots");
    let write = |path: &str| {
        files.dispatch(
            "write_file",
            json!({"path": path, "content": "x"})
                .as_object()
                .expect("object"),
        )
    };
    assert!(
        write("docs/notes.md").is_ok(),
        "the writable inner root, by a relative path"
    );
    assert!(write("docs/../top.md").is_err(), "the read-only outer root");
    assert_eq!(
        std::fs::read_to_string(inner.join("notes.md")).expect("written"),
        "x"
    );
}

/// A file written over keeps its permissions.
#[test]
fn writing_over_a_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let w = world();
    let secret = w.root.join("secret.env");
    std::fs::write(&secret, "A=1\n").expect("secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    run(
        &w,
        "write_file",
        json!({"path": "secret.env", "content": "A=2\n"}),
    )
    .expect("written");
    run(
        &w,
        "edit_file",
        json!({"path": "secret.env", "edits": [{"oldText": "A=2", "newText": "A=3"}]}),
    )
    .expect("edited");
    let mode = std::fs::metadata(&secret)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(std::fs::read_to_string(&secret).expect("read"), "A=3\n");
}

/// A content search never looks past max_read_bytes (1024 here), and says it left a file
/// out; a name that is not UTF-8, and a subdirectory that cannot be read, leave the rest of a
/// listing or tree as it is.
#[test]
fn searches_stay_within_the_read_limit_and_odd_entries_spoil_no_listing() {
    use std::os::unix::ffi::OsStrExt;
    let w = world();
    std::fs::write(
        w.root.join("big.log"),
        format!("{}password=a", "x".repeat(2000)),
    )
    .expect("big");
    let found = run(
        &w,
        "search_files",
        json!({"path": ".", "pattern": "big.log", "content": "password=a"}),
    )
    .expect("searched");
    let answer = found.structured_content.clone().unwrap_or_default();
    assert_eq!(answer["matches"], json!([]), "{answer}");
    assert_eq!(answer["truncated"], true, "{answer}");

    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(w.root.join(odd), "latin-1 name").expect("odd name");
    let listed = run(&w, "list_directory", json!({"path": "."})).expect("listed");
    assert!(
        listed.text_content().contains("hello.txt"),
        "{}",
        listed.text_content()
    );
    let tree = run(&w, "directory_tree", json!({"path": "."})).expect("tree");
    assert!(
        tree.text_content().contains("hello.txt"),
        "{}",
        tree.text_content()
    );
}

/// One read_multiple_files call reads at most four times max_read_bytes (1024 here); the
/// paths past that are answered with why.
#[test]
fn a_multiple_read_stops_at_its_limit() {
    let w = world();
    let paths: Vec<String> = (0..6)
        .map(|i| {
            let name = format!("part{i}.txt");
            std::fs::write(w.root.join(&name), "z".repeat(1000)).expect("part");
            name
        })
        .collect();
    let read = run(&w, "read_multiple_files", json!({"paths": paths})).expect("read");
    let files = read.structured_content.clone().unwrap_or_default()["files"].clone();
    let files = files.as_array().expect("files");
    assert_eq!(files.len(), 6);
    assert!(
        files[..5].iter().all(|f| f.get("content").is_some()),
        "{files:?}"
    );
    assert!(
        files[5]["error"]
            .as_str()
            .is_some_and(|e| e.contains("limit of 4096 bytes")),
        "{:?}",
        files[5]
    );
}
