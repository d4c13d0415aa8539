"""The toolapi family's example backend: a notebook of titled notes (one class).

A backend is plain Python: each public method of a class is a tool (its task's
tools.json describes it to the agent), ``_load_scenario`` receives the task's initial
state, and the public attributes are the state the grader compares after each turn.
"""


class NoteBook:
    """Titled notes, with a count of edits."""

    def __init__(self):
        self.notes = {}
        self.edits = 0

    def _load_scenario(self, scenario, long_context=False):
        self.notes = dict(scenario.get("notes", {}))
        self.edits = int(scenario.get("edits", 0))

    def list_notes(self):
        """The titles of all notes, sorted."""
        return {"titles": sorted(self.notes)}

    def read_note(self, title):
        """The text of one note."""
        if title not in self.notes:
            return {"error": f"no note titled {title!r}"}
        return {"title": title, "text": self.notes[title]}

    def add_note(self, title, text):
        """Add a note (its title must be new)."""
        if title in self.notes:
            return {"error": f"a note titled {title!r} exists already"}
        self.notes[title] = text
        self.edits += 1
        return {"added": title}

    def append_to_note(self, title, text):
        """Append text to a note, on a new line."""
        if title not in self.notes:
            return {"error": f"no note titled {title!r}"}
        self.notes[title] += "\n" + text
        self.edits += 1
        return {"title": title, "length": len(self.notes[title])}

    def delete_note(self, title):
        """Delete a note."""
        if self.notes.pop(title, None) is None:
            return {"error": f"no note titled {title!r}"}
        self.edits += 1
        return {"deleted": title}
