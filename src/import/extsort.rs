//! A small external merge sort: items are buffered up to a memory budget,
//! sorted on all cores, spilled to run files, and merged with a heap. Memory
//! stays near the budget whatever the input size.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::slice::ParallelSliceMut;

/// An item that can be sorted externally.
pub trait Item: Ord + Send + Sized {
    /// Writes the item to a run file.
    fn write_to(&self, w: &mut impl Write) -> io::Result<()>;
    /// Reads an item written by [`Item::write_to`]; `None` at the end.
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>>;
    /// Approximate bytes the item holds in memory.
    fn mem_bytes(&self) -> usize;
}

/// Collects items; [`Sorter::finish`] yields them in order.
pub struct Sorter<T: Item> {
    buf: Vec<T>,
    bytes: usize,
    budget: usize,
    dir: PathBuf,
    name: String,
    runs: Vec<PathBuf>,
}

impl<T: Item> Sorter<T> {
    /// A sorter holding at most about `budget` bytes, spilling under `dir`.
    pub fn new(dir: &Path, name: &str, budget: usize) -> Sorter<T> {
        Sorter {
            buf: Vec::new(),
            bytes: 0,
            budget: budget.max(1 << 16),
            dir: dir.to_path_buf(),
            name: name.to_string(),
            runs: Vec::new(),
        }
    }

    pub fn push(&mut self, item: T) -> io::Result<()> {
        self.bytes += item.mem_bytes();
        self.buf.push(item);
        if self.bytes >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        self.buf.par_sort_unstable();
        let path = self
            .dir
            .join(format!("{}-{:05}.run", self.name, self.runs.len()));
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        for item in self.buf.drain(..) {
            item.write_to(&mut w)?;
        }
        w.into_inner().map_err(|e| e.into_error())?;
        self.buf = Vec::new();
        self.bytes = 0;
        self.runs.push(path);
        Ok(())
    }

    /// All items in order. Run files are removed when the iterator drops.
    pub fn finish(mut self) -> io::Result<Sorted<T>> {
        if self.runs.is_empty() {
            self.buf.par_sort_unstable();
            return Ok(Sorted(Inner::Memory(
                std::mem::take(&mut self.buf).into_iter(),
            )));
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        // Bounded fan-in: merge consecutive groups of runs into one run
        // each (so equal items keep their push order) until few enough
        // remain to be open at once.
        let mut pass = 0;
        while self.runs.len() > MAX_FAN_IN {
            pass += 1;
            let old = std::mem::take(&mut self.runs);
            for (g, group) in old.chunks(MAX_FAN_IN).enumerate() {
                let path = self.dir.join(format!("{}-p{pass}-{g:05}.run", self.name));
                let mut w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
                self.runs.push(path);
                let merged = open_merge::<T>(group.to_vec())?;
                for item in merged {
                    item?.write_to(&mut w)?;
                }
                w.into_inner().map_err(|e| e.into_error())?;
            }
            for p in &old {
                let _ = std::fs::remove_file(p);
            }
        }
        open_merge(std::mem::take(&mut self.runs))
    }
}

/// The most run files a merge holds open at once (each with a 1 MiB
/// buffer): more runs are merged in passes.
pub const MAX_FAN_IN: usize = 64;

/// A merge of `paths` (at most [`MAX_FAN_IN`]), which it removes when done.
fn open_merge<T: Item>(paths: Vec<PathBuf>) -> io::Result<Sorted<T>> {
    let mut readers = Vec::new();
    let mut heap = BinaryHeap::new();
    for (i, p) in paths.iter().enumerate() {
        let mut r = BufReader::with_capacity(1 << 20, File::open(p)?);
        if let Some(item) = T::read_from(&mut r)? {
            heap.push(Head { item, run: i });
        }
        readers.push(r);
    }
    Ok(Sorted(Inner::Merge {
        readers,
        heap,
        paths,
    }))
}

struct Head<T> {
    item: T,
    run: usize,
}

impl<T: Ord> PartialEq for Head<T> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<T: Ord> Eq for Head<T> {}
impl<T: Ord> PartialOrd for Head<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T: Ord> Ord for Head<T> {
    // Reversed: BinaryHeap is a max-heap. Ties go to the earlier run, so
    // equal items come out in the order they were pushed.
    fn cmp(&self, o: &Self) -> Ordering {
        o.item.cmp(&self.item).then_with(|| o.run.cmp(&self.run))
    }
}

/// The sorted items of a [`Sorter`].
pub struct Sorted<T: Item>(Inner<T>);

impl<T: Item> Sorted<T> {
    /// Run files this merge holds open (0 when it sorted in memory).
    pub fn open_runs(&self) -> usize {
        match &self.0 {
            Inner::Memory(_) => 0,
            Inner::Merge { readers, .. } => readers.len(),
        }
    }
}

enum Inner<T: Item> {
    Memory(std::vec::IntoIter<T>),
    Merge {
        readers: Vec<BufReader<File>>,
        heap: BinaryHeap<Head<T>>,
        paths: Vec<PathBuf>,
    },
}

impl<T: Item> Iterator for Sorted<T> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<io::Result<T>> {
        match &mut self.0 {
            Inner::Memory(it) => it.next().map(Ok),
            Inner::Merge { readers, heap, .. } => {
                let Head { item, run } = heap.pop()?;
                match T::read_from(&mut readers[run]) {
                    Ok(Some(next)) => heap.push(Head { item: next, run }),
                    Ok(None) => {}
                    Err(e) => return Some(Err(e)),
                }
                Some(Ok(item))
            }
        }
    }
}

impl<T: Item> Drop for Sorted<T> {
    fn drop(&mut self) {
        if let Inner::Merge { paths, .. } = &self.0 {
            for p in paths {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

impl<T: Item> Drop for Sorter<T> {
    fn drop(&mut self) {
        // Runs not handed to a `Sorted` (an error midway) are removed here.
        for p in &self.runs {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Reads exactly `N` bytes, or `None` at a clean end of file.
pub fn read_array<const N: usize>(r: &mut impl BufRead) -> io::Result<Option<[u8; N]>> {
    let mut b = [0u8; N];
    if r.fill_buf()?.is_empty() {
        return Ok(None);
    }
    r.read_exact(&mut b)?;
    Ok(Some(b))
}

/// Writes a u16-length-prefixed string.
pub fn write_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    let n = u16::try_from(s.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "string too long for a run"))?;
    w.write_all(&n.to_be_bytes())?;
    w.write_all(s.as_bytes())
}

/// Writes part hashes as a run holds them: a count (u8), then u64 BE each.
pub fn write_parts(w: &mut impl Write, parts: &[u64]) -> io::Result<()> {
    let n = u8::try_from(parts.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many part hashes"))?;
    w.write_all(&[n])?;
    for p in parts {
        w.write_all(&p.to_be_bytes())?;
    }
    Ok(())
}

/// Reads part hashes written by [`write_parts`].
pub fn read_parts(r: &mut impl Read) -> io::Result<Vec<u64>> {
    let mut n = [0u8; 1];
    r.read_exact(&mut n)?;
    (0..n[0])
        .map(|_| {
            let mut p = [0u8; 8];
            r.read_exact(&mut p)?;
            Ok(u64::from_be_bytes(p))
        })
        .collect()
}

/// Reads a string written by [`write_str`].
pub fn read_str(r: &mut impl BufRead) -> io::Result<String> {
    let mut n = [0u8; 2];
    r.read_exact(&mut n)?;
    let mut b = vec![0u8; u16::from_be_bytes(n) as usize];
    r.read_exact(&mut b)?;
    String::from_utf8(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

impl Item for u128 {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.to_be_bytes())
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        Ok(read_array::<16>(r)?.map(u128::from_be_bytes))
    }
    fn mem_bytes(&self) -> usize {
        16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_and_in_memory_sorts_agree() {
        let dir = tempfile::tempdir().unwrap();
        let mut x: u128 = 12345;
        let items: Vec<u128> = (0..50_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x % 1000
            })
            .collect();
        let mut want = items.clone();
        want.sort();
        for budget in [1 << 16, 1 << 30] {
            let mut s = Sorter::new(dir.path(), "t", budget);
            for &i in &items {
                s.push(i).unwrap();
            }
            let got: Vec<u128> = s.finish().unwrap().map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "budget {budget}");
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "runs removed"
        );
    }

    /// Issue 16: the merge opened every run at once (a 1 MiB buffer and a
    /// file descriptor each, growing with the input). Now at most
    /// MAX_FAN_IN are open; more are merged in passes, still in order and
    /// stable.
    #[test]
    fn regression_16_merge_fan_in_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        // 64 KiB budget, 16 bytes an item: a run every 4096 items, ~150 runs.
        let n = 4096 * 150 + 7;
        let mut s = Sorter::new(dir.path(), "t", 1 << 16);
        for i in 0..n as u128 {
            // Descending keys with ties: item = key * 2^20 + push order.
            s.push(((n as u128 - i) / 3) << 20 | i).unwrap();
        }
        let sorted = s.finish().unwrap();
        assert!(sorted.open_runs() <= MAX_FAN_IN, "{}", sorted.open_runs());
        assert!(sorted.open_runs() > 1);
        let got: Vec<u128> = sorted.map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), n);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
