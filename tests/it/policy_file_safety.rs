//! The policy file against hostile use of its folder: `RL.POLICY SAVE` creates
//! its temporary file exclusively and never through a link, keeps the file's
//! mode (a new one is 0600), and refuses to replace a symbolic link; only a
//! regular file is read (a FIFO never blocks the server); a relative path is
//! fixed when the module loads, whatever `CONFIG SET dir` does later.

use crate::common::*;

use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

fn ok(c: &mut redis::Connection, words: &str) {
    assert_eq!(run::<String>(c, words), "OK", "{words}");
}

fn list(c: &mut redis::Connection) -> Vec<String> {
    run(c, "RL.POLICY LIST")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A connection whose reads give up after a while: a server blocked in a
/// call answers an error here instead of hanging the test.
fn guarded(s: &Server) -> redis::Connection {
    let c = s.conn();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c
}

const FILE: &str = "free FIXED 3 1m\n";

server_tests! {
    fn save_never_follows_a_link_planted_at_its_temporary_file(flavor) {
        let dir = temp_folder(&format!("planted-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        set_mode(&path, 0o600);
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        // Someone who may write in the folder links the temporary file's name
        // (`<file>.tmp-<pid>` until now) to a file the server may write.
        let pid: u32 = info(c, "server", "process_id").parse().unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        symlink(&victim, dir.join(format!("rl.conf.tmp-{pid}"))).unwrap();
        ok(c, "RL.POLICY SET extra FIXED 1 1s");
        ok(c, "RL.POLICY SAVE");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_file());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "extra FIXED 1 1s\nfree FIXED 3 1m\n");
        assert_eq!(mode(&path), 0o600, "the file's mode is kept");
        // Nothing else appeared or was left behind.
        assert_eq!(names(&dir), ["rl.conf", &format!("rl.conf.tmp-{pid}"), "victim"]);
    }

    fn save_keeps_the_files_mode_and_makes_a_new_file_private(flavor) {
        let dir = temp_folder(&format!("mode-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        set_mode(&path, 0o640);
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        ok(c, "RL.POLICY SAVE");
        assert_eq!(mode(&path), 0o640);
        std::fs::remove_file(&path).unwrap();
        ok(c, "RL.POLICY SAVE");
        assert_eq!(mode(&path), 0o600, "a new policy file is readable by its owner only");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), FILE);
        assert_eq!(names(&dir), ["rl.conf"]);
    }

    fn save_refuses_to_replace_a_symbolic_link(flavor) {
        let dir = temp_folder(&format!("link-{flavor:?}"));
        let target = dir.join("real.conf");
        std::fs::write(&target, FILE).unwrap();
        let path = dir.join("rl.conf");
        symlink(&target, &path).unwrap();
        // Read through the link, at start and by LOAD.
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut s.conn();
        assert_eq!(list(c), ["free FIXED 3 1m"]);
        ok(c, "RL.POLICY LOAD");
        // Never replaced: the link and its target stay as they are.
        ok(c, "RL.POLICY SET extra FIXED 1 1s");
        assert_eq!(
            rl_err(c, "RL.POLICY SAVE"),
            format!(
                "ERR policy file {}: a symbolic link: RL.POLICY SAVE replaces only a regular file (name the link's target in policy-file)",
                path.display()
            )
        );
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), FILE);
        assert_eq!(names(&dir), ["real.conf", "rl.conf"]);
    }

    fn only_a_regular_file_is_read(flavor) {
        let dir = temp_folder(&format!("fifo-{flavor:?}"));
        let path = dir.join("rl.conf");
        std::fs::write(&path, FILE).unwrap();
        let s = Server::start_with(flavor, &["--rl.policy-file", path.to_str().unwrap()]);
        let c = &mut guarded(&s);
        std::fs::remove_file(&path).unwrap();
        mkfifo(&path);
        // Until now LOAD blocked the whole server until a writer opened the FIFO.
        let refused = |kind: &str| format!("ERR policy file {}: not a regular file: {kind}", path.display());
        assert_eq!(rl_err(c, "RL.POLICY LOAD"), refused("a FIFO"));
        assert_eq!(list(c), ["free FIXED 3 1m"]);
        // SAVE does not replace it either.
        assert_eq!(rl_err(c, "RL.POLICY SAVE"), refused("a FIFO"));
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_fifo());
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(rl_err(c, "RL.POLICY LOAD"), refused("a directory"));
        // A link to a FIFO is refused as the FIFO is.
        std::fs::remove_dir(&path).unwrap();
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        symlink(&fifo, &path).unwrap();
        assert_eq!(rl_err(c, "RL.POLICY LOAD"), refused("a FIFO"));
        assert_eq!(list(c), ["free FIXED 3 1m"]);
        // At start: the module's load is refused, the reason in the log.
        let bare = Server::start_with(flavor, &["--no-module", "--enable-module-command", "yes"]);
        let loaded = redis::cmd("MODULE")
            .arg("LOAD")
            .arg(module_path().to_str().unwrap())
            .arg("policy-file")
            .arg(path.to_str().unwrap())
            .query::<redis::Value>(&mut guarded(&bare));
        assert!(loaded.is_err());
        let log = bare.log();
        assert!(log.contains(&format!("rl: policy file {}: not a regular file: a FIFO; the module is not loaded", path.display())), "{log}");
        assert_eq!(run::<String>(&mut bare.conn(), "PING"), "PONG");
    }

    fn a_relative_path_is_fixed_when_the_module_loads(flavor) {
        let dir = temp_folder(&format!("relative-{flavor:?}"));
        std::fs::write(dir.join("rl.conf"), FILE).unwrap();
        let other = temp_folder(&format!("relative-other-{flavor:?}"));
        std::fs::write(other.join("rl.conf"), "decoy FIXED 1 1s\n").unwrap();
        let s = Server::start_with(
            flavor,
            &["--dir", dir.to_str().unwrap(), "--rl.policy-file", "rl.conf", "--enable-protected-configs", "yes"],
        );
        let c = &mut s.conn();
        let fixed = std::fs::canonicalize(&dir).unwrap().join("rl.conf");
        let shown: Vec<String> = run(c, "CONFIG GET rl.policy-file");
        assert_eq!(shown, ["rl.policy-file", fixed.to_str().unwrap()]);
        // The server's folder moves; the policy file does not.
        let _: () = redis::cmd("CONFIG").arg("SET").arg("dir").arg(other.to_str().unwrap()).query(c).unwrap();
        ok(c, "RL.POLICY SET gold SLIDING 1000 1m");
        ok(c, "RL.POLICY SAVE");
        assert_eq!(std::fs::read_to_string(&fixed).unwrap(), "free FIXED 3 1m\ngold SLIDING 1000 1m\n");
        assert_eq!(std::fs::read_to_string(other.join("rl.conf")).unwrap(), "decoy FIXED 1 1s\n");
        assert_eq!(run::<i64>(c, "RL.POLICY DEL gold"), 1);
        ok(c, "RL.POLICY LOAD");
        assert_eq!(list(c), ["free FIXED 3 1m", "gold SLIDING 1000 1m"]);
        assert_eq!(names(&dir), ["rl.conf"]);
    }
}
