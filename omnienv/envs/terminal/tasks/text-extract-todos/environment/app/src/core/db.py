import sqlite3


class DB:
    def __init__(self, path):
        # TODO(alice):   pool connections
        self.conn = sqlite3.connect(path)

    def query(self, sql):
        #   TODO(erin): validate sql
        return self.conn.execute(sql).fetchall()
