"""A module's traversal: its descendants, children, parameters and buffers, depth first."""

from __future__ import annotations


class ModuleTraversal:
    """The iteration methods of :class:`~functorch_core.nn.Module`."""

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Yield ``(dotted_name, module)`` for ``self`` and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, mod in self._modules.items():
            if mod is not None:
                sub = f"{prefix}.{name}" if prefix else name
                yield from mod.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """Yield ``self`` and every descendant module."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Yield ``(name, module)`` for the immediate children."""
        seen = set()
        for name, mod in self._modules.items():
            if mod is not None and id(mod) not in seen:
                seen.add(id(mod))
                yield name, mod

    def children(self):
        """Yield the immediate child modules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, own, prefix, recurse, remove_duplicate=True):
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        seen = set()
        for mprefix, mod in mods:
            for name, v in mod.__dict__[own].items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mprefix}.{name}" if mprefix else name), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(dotted_name, parameter)`` in registration order, depth first.

        Args:
            prefix (str): prepended to every name. Default ``''``.
            recurse (bool): include the submodules' parameters. Default ``True``.
            remove_duplicate (bool): a parameter registered under several names (tied
                weights) is yielded once, under its first name, as in PyTorch. Default
                ``True``.

        Example::

            >>> lm.out.weight = lm.emb.weight
            >>> [k for k, _ in lm.named_parameters()]       # 'out.weight' is not listed
            ['emb.weight', ...]
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Yield the parameters (each tied or shared one once), in ``named_parameters()``
        order: the order of the Module's gradient leaves, and of ``list(g.parameters())``
        for the Module ``g`` that ``grad`` returns."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield ``(dotted_name, buffer)``."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Yield the buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b
