"""Command line: todocli --file F (add TITLE [--tag T]... | done ID | list)."""

import argparse
import sys

from todocli.store import Item, load_items, save_items


def build_parser():
    parser = argparse.ArgumentParser(prog="todocli")
    parser.add_argument("--file", required=True, help="the JSON file holding the list")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add an item")
    add.add_argument("title")
    add.add_argument("--tag", action="append", default=[])
    done = sub.add_parser("done", help="mark an item done")
    done.add_argument("id", type=int)
    sub.add_parser("list", help="show the items")
    return parser


def cmd_add(args, items):
    new = Item(id=max((i.id for i in items), default=0) + 1, title=args.title, tags=args.tag)
    items.append(new)
    save_items(args.file, items)
    print(f"added {new.id}")
    return 0


def cmd_done(args, items):
    for item in items:
        if item.id == args.id:
            item.done = True
            save_items(args.file, items)
            print(f"done {item.id}")
            return 0
    print(f"error: no item {args.id}", file=sys.stderr)
    return 1


def cmd_list(args, items):
    if not items:
        print("no items")
        return 0
    for item in items:
        print(item.line())
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    items = load_items(args.file)
    handler = {"add": cmd_add, "done": cmd_done, "list": cmd_list}[args.command]
    return handler(args, items)


if __name__ == "__main__":
    sys.exit(main())
