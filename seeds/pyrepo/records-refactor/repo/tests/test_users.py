import pytest

from userdb import User, read_users

PASSWD = """# system
root:0:0:/root:/bin/bash

ann:1000:1000:/home/ann:/bin/zsh
"""


def test_read_users():
    assert read_users(PASSWD) == [
        User("root", 0, 0, "/root", "/bin/bash"),
        User("ann", 1000, 1000, "/home/ann", "/bin/zsh"),
    ]


def test_wrong_field_count():
    with pytest.raises(ValueError, match="line 2"):
        read_users("root:0:0:/root:/bin/bash\nbroken:1\n")
