//! A table of strings kept in one buffer (a sheet's hundreds of thousands of inline strings
//! cost an allocation each otherwise).

/// Strings by index, their text end to end.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Strings {
    text: String,
    ends: Vec<usize>,
}

impl Strings {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `index`-th string (None past the end).
    pub fn get(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)?;
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        self.text.get(start..end)
    }

    /// The buffer the next string is written into; [`Strings::close`] ends it.
    pub(crate) fn open(&mut self) -> &mut String {
        &mut self.text
    }

    /// Ends the string written since the last one; returns its index.
    pub(crate) fn close(&mut self) -> usize {
        self.ends.push(self.text.len());
        self.ends.len() - 1
    }

    /// `other`'s strings after these.
    pub(crate) fn extend(&mut self, other: &Strings) {
        let base = self.text.len();
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + base));
    }
}

impl<S: AsRef<str>> FromIterator<S> for Strings {
    fn from_iter<I: IntoIterator<Item = S>>(items: I) -> Self {
        let mut strings = Strings::default();
        for item in items {
            strings.open().push_str(item.as_ref());
            strings.close();
        }
        strings
    }
}
