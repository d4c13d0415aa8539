"""The trie."""


class _Node:
    __slots__ = ("children", "count")

    def __init__(self):
        self.children = {}
        self.count = 0


class Trie:
    """Words (non-empty strings) with counts, stored by prefix."""

    def __init__(self):
        self._root = _Node()
        self._size = 0

    def insert(self, word, count=1):
        """Add count uses of word."""
        if not word:
            raise ValueError("words must not be empty")
        if count < 1:
            raise ValueError("count must be at least 1")
        node = self._root
        for ch in word:
            node = node.children.setdefault(ch, _Node())
        if node.count == 0:
            self._size += 1
        node.count += count

    def _find(self, prefix):
        node = self._root
        for ch in prefix:
            node = node.children.get(ch)
            if node is None:
                return None
        return node

    def count(self, word):
        """How often word was inserted (0 if never)."""
        node = self._find(word)
        return node.count if node else 0

    def __contains__(self, word):
        return self.count(word) > 0

    def __len__(self):
        return self._size

    def _walk(self, node, prefix):
        if node.count:
            yield prefix, node.count
        for ch in sorted(node.children):
            yield from self._walk(node.children[ch], prefix + ch)

    def words_with_prefix(self, prefix=""):
        """The words starting with prefix, alphabetically."""
        node = self._find(prefix)
        return [w for w, _ in self._walk(node, prefix)] if node else []

    def node_count(self):
        """Nodes in the trie, the root included."""
        stack, total = [self._root], 0
        while stack:
            node = stack.pop()
            total += 1
            stack.extend(node.children.values())
        return total
