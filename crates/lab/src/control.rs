//! The runtime's end of the control channel that carries block boundaries to the generator.
//!
//! The generator passes two inherited descriptors and names them in
//! [`lab_protocol::CONTROL_FDS_ENV`]. Block boundaries travel there rather than on stdout, so a
//! block's own output can neither forge a boundary nor run into one (`print!` without a final
//! newline, a line that looks like a marker). Each boundary is a handshake: flush stdout, send
//! the frame, wait for the generator's acknowledgement; the generator answers only after it has
//! read everything already printed, so every byte lands in the block that printed it.
//!
//! Without the variable (a test, or a binary run by hand) boundaries are simply not reported.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

use lab_protocol::{ACK, BlockStart, CONTROL_FDS_ENV};

struct Channel {
    to_generator: File,
    from_generator: File,
}

static CHANNEL: Mutex<Option<Channel>> = Mutex::new(None);

/// Takes over the descriptors named in the environment. Call once, at start-up, before any
/// thread exists.
pub(crate) fn open_from_env() -> Result<(), String> {
    let Some(spec) = std::env::var_os(CONTROL_FDS_ENV) else {
        return Ok(());
    };
    // SAFETY: called at the start of `main`, before the chapter or anything else starts a
    // thread, so nothing reads the environment concurrently. Processes the blocks start must
    // not believe they own a channel they do not inherit.
    unsafe { std::env::remove_var(CONTROL_FDS_ENV) };
    let (write, read) = parse(&spec.to_string_lossy())
        .ok_or_else(|| format!("{CONTROL_FDS_ENV} must be two descriptors `W,R`, got {spec:?}"))?;
    let channel = Channel {
        to_generator: File::from(adopt(write)?),
        from_generator: File::from(adopt(read)?),
    };
    if let Ok(mut slot) = CHANNEL.lock() {
        *slot = Some(channel);
    }
    Ok(())
}

fn parse(spec: &str) -> Option<(RawFd, RawFd)> {
    let (write, read) = spec.split_once(',')?;
    let (write, read): (RawFd, RawFd) = (write.trim().parse().ok()?, read.trim().parse().ok()?);
    // 0-2 are the standard streams; the two must differ.
    (write > 2 && read > 2 && write != read).then_some((write, read))
}

/// Owns an inherited descriptor as a close-on-exec duplicate, so that processes a block
/// spawns never hold the channel open (the generator relies on seeing it close).
fn adopt(fd: RawFd) -> Result<OwnedFd, String> {
    // SAFETY: the generator opened `fd` for this process alone and named it in the
    // environment, which `open_from_env` reads once; nothing else in the process uses it.
    let inherited = unsafe { OwnedFd::from_raw_fd(fd) };
    match inherited.try_clone() {
        Ok(duplicate) => Ok(duplicate),
        Err(e) => {
            // Not an open descriptor after all: there is nothing to close.
            std::mem::forget(inherited);
            Err(format!("control descriptor {fd}: {e}"))
        }
    }
}

/// Tells the generator that block `index` starts and waits until it has read the output so far.
pub(crate) fn block_starts(index: usize) {
    let _ = std::io::stdout().flush();
    let Ok(mut slot) = CHANNEL.lock() else {
        return;
    };
    let Some(channel) = slot.as_mut() else {
        return;
    };
    let frame = BlockStart(u32::try_from(index).unwrap_or(u32::MAX)).encode();
    let mut ack = [0u8];
    let answered = channel
        .to_generator
        .write_all(&frame)
        .and_then(|()| channel.from_generator.read_exact(&mut ack));
    if answered.is_err() || ack[0] != ACK {
        // The generator is gone or confused: stop talking to it, keep running the chapter.
        *slot = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_pair_is_parsed_strictly() {
        assert_eq!(parse("3,4"), Some((3, 4)));
        assert_eq!(parse(" 10 , 11 "), Some((10, 11)));
        for bad in ["", "3", "3,3", "1,4", "3,-4", "a,b", "3,4,5"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
