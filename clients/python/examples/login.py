import os

import redis
from flask import Flask, jsonify, request

import redis_rl
from redis_rl import policy

# 5 failed logins per account per 15 minutes; the next attempt starts a penalty: 15 minutes of
# 429s for that account, twice as long for each penalty that starts within a day of the end of
# the one before (30 min, 1 h ...), at most a day.
FAILURES = policy.fixed(5, "15m", penalty="15m", escalate="24h", name="login")
PASSWORDS = {"alice": "correct horse battery staple"}  # your accounts' store


def create_app(limiter: redis_rl.Limiter, failures: redis_rl.Policy = FAILURES) -> Flask:
    app = Flask(__name__)

    @app.post("/login")
    def login():
        account, password = request.form.get("account", ""), request.form.get("password", "")
        # Every attempt is charged before the password is checked (concurrent guesses cannot
        # all pass a check made before any of them counts) ...
        decision, attempt = limiter.reserve(f"login:{account}", failures, 1)
        if attempt is None:  # 5 failures, a penalty or a ban: the password is not even read
            return jsonify(error="too many failed logins"), 429, decision.headers()
        if PASSWORDS.get(account) != password:
            return jsonify(error="wrong account or password"), 401
        attempt.settle(0)  # ... and a success is given back: only failures count
        return jsonify(account=account)

    return app


if __name__ == "__main__":
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    limiter = redis_rl.Limiter(client)
    http = create_app(limiter).test_client()  # Flask's: calls the app in this process

    def login(account: str, password: str):
        return http.post("/login", data={"account": account, "password": password})

    print(login("alice", "correct horse battery staple").status_code)  # 200
    print([login("alice", "guess").status_code for _ in range(5)])  # [401, 401, 401, 401, 401]
    r = login("alice", "correct horse battery staple")  # the 6th attempt starts the penalty
    print(r.status_code, int(r.headers["Retry-After"]) // 60)  # 429 15
    print(r.headers["X-RateLimit-Remaining"], r.json)  # 0 {'error': 'too many failed logins'}

    # A ban by hand: an hour of 429s for the account (False: it had no key yet); 0 lifts it
    # (True: the key existed, and held the ban alone, so it is deleted).
    print(limiter.ban("login:mallory", 3_600_000))  # False
    r = login("mallory", "anything")
    print(r.status_code, int(r.headers["Retry-After"]) // 60)  # 429 60
    print(limiter.ban("login:mallory", 0))  # True
    print(login("mallory", "anything").status_code)  # 401
