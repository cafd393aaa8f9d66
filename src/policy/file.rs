//! The policy file on disk, handled as a careful daemon handles its own state.
//!
//! Reading: only a regular file is read (a link to one is followed). Its type is
//! checked before it is opened, so a FIFO, socket or device is never opened, and
//! again on the opened descriptor (`fstat`), so a file swapped in between is
//! refused too; it is opened with `O_NONBLOCK`, so even then no open waits for a
//! writer; at most `MAX_POLICY_FILE + 1` bytes are read.
//!
//! Writing replaces the file whole, or leaves it as it was: the text goes to a
//! new temporary file in the same folder, created exclusively and never through
//! a link (`O_CREAT | O_EXCL | O_NOFOLLOW`, a random name), given the file's
//! mode (0600 for a new file), flushed to disk, renamed over the file, and then
//! the folder is flushed so the rename survives a crash. A symbolic link or any
//! other non-regular file at the path is refused, never replaced or written
//! through. Every failure is reported, and a failed write leaves no temporary
//! file behind.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::facts::{messages, MAX_POLICY_FILE};

/// The mode of a policy file `SAVE` creates: its owner's to read and write.
const NEW_FILE_MODE: u32 = 0o600;

/// Attempts at a free temporary name before giving up (each name is random, so
/// only someone filling the folder with guesses makes one fail).
const TEMPORARY_ATTEMPTS: usize = 16;

/// The file's bytes: a regular file of at most `MAX_POLICY_FILE` bytes.
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    regular(&std::fs::metadata(path).map_err(text)?.file_type())?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(text)?;
    regular(&file.metadata().map_err(text)?.file_type())?;
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(text)?;
    match bytes.len() as u64 > MAX_POLICY_FILE {
        true => Err(messages::POLICY_FILE_LARGE.to_owned()),
        false => Ok(bytes),
    }
}

/// Replaces the file at `path` (absolute) by `bytes`, as the module's doc says.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 > MAX_POLICY_FILE {
        return Err(messages::POLICY_SAVE_LARGE.to_owned());
    }
    let mode = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(messages::POLICY_FILE_LINK.to_owned())
        }
        Ok(meta) => {
            regular(&meta.file_type())?;
            meta.permissions().mode() & 0o777
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => NEW_FILE_MODE,
        Err(e) => return Err(e.to_string()),
    };
    let (temporary, file) = create_temporary(path).map_err(text)?;
    let written = fill(file, mode, bytes).and_then(|_| std::fs::rename(&temporary, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(e.to_string());
    }
    sync(&folder(path)).map_err(|e| format!("{}: {e}", messages::POLICY_FILE_FOLDER_SYNC))
}

/// Gives `file` its mode and `bytes`, on disk once this returns; closes it.
fn fill(mut file: File, mode: u32, bytes: &[u8]) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// `Ok` for a regular file, else what it is.
fn regular(kind: &std::fs::FileType) -> Result<(), String> {
    let what = match kind {
        k if k.is_file() => return Ok(()),
        k if k.is_dir() => "a directory",
        k if k.is_fifo() => "a FIFO",
        k if k.is_socket() => "a socket",
        k if k.is_char_device() || k.is_block_device() => "a device",
        _ => "not a file",
    };
    Err(format!("{}: {what}", messages::POLICY_FILE_NOT_REGULAR))
}

/// A new file beside `path`, `<name>.tmp-<pid>-<random>`, created by this call
/// alone: never an existing file, never through a link.
fn create_temporary(path: &Path) -> io::Result<(PathBuf, File)> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for _ in 0..TEMPORARY_ATTEMPTS {
        let temporary = path.with_file_name(format!(
            "{name}.tmp-{}-{:016x}",
            std::process::id(),
            random()
        ));
        let created = OpenOptions::new()
            .write(true)
            .create_new(true) // O_CREAT | O_EXCL
            .custom_flags(libc::O_NOFOLLOW)
            .mode(NEW_FILE_MODE)
            .open(&temporary);
        match created {
            Ok(file) => return Ok((temporary, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// 64 bits from the kernel's random source, or from the clock if it fails.
fn random() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: `bytes` is writable for its length.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got == bytes.len() as isize {
        return u64::from_ne_bytes(bytes);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The folder holding `path`: `.` for a bare name (never `""`, which opens nothing).
fn folder(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Flushes a folder's entries (a rename in it) to disk.
fn sync(folder: &Path) -> io::Result<()> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(folder)?
        .sync_all()
}

fn text(e: io::Error) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_of_a_bare_name_is_the_working_one() {
        assert_eq!(folder(Path::new("rl.conf")), PathBuf::from("."));
        assert_eq!(folder(Path::new("/etc/rl.conf")), PathBuf::from("/etc"));
        assert_eq!(folder(Path::new("conf/rl.conf")), PathBuf::from("conf"));
    }

    #[test]
    fn temporary_names_differ() {
        assert_ne!(random(), random());
    }
}
