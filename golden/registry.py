"""Things known by name and added once: the one mechanism behind the block registry
(:mod:`linkcodec.rtl.blocks`) and the link codecs' (:mod:`linkcodec.golden.link_codec`,
:mod:`linkcodec.rtl.link_codec`)."""

__all__ = ["Registry"]


class Registry(dict):
    """A dict of registered things by name. :meth:`add` refuses an empty or taken name,
    :meth:`lookup` an unknown one with ``unknown`` (its ``{name!r}`` and ``{known}``
    filled in). ``builtin``, if given, is called once, before the first :meth:`lookup`
    or :meth:`names`: it registers the package's own (imported then, not at import
    time, so that they may import the module that holds the registry)."""

    def __init__(self, what, *, unknown, builtin=None):
        super().__init__()
        self.what, self._unknown, self._builtin = what, unknown, builtin

    def _load(self):
        builtin, self._builtin = self._builtin, None
        if builtin is not None:
            builtin()

    def add(self, name, item):
        """Register ``item`` as ``name``; returns it."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what} needs a name, not {name!r}")
        self._load()
        if name in self:
            raise ValueError(f"a {self.what} called {name!r} is already registered")
        self[name] = item
        return item

    def remove(self, name):
        """Unregister ``name`` (a test's made-up one, when it is done)."""
        self.lookup(name)
        del self[name]

    def lookup(self, name):
        """What is registered as ``name``; an unknown name is refused, naming the known."""
        self._load()
        if name not in self:
            known = ", ".join(map(repr, self))
            raise ValueError(self._unknown.format(name=name, known=known))
        return self[name]

    def names(self):
        """The registered names, in the order they were added."""
        self._load()
        return tuple(self)
