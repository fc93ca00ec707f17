"""Credential shapes by kind: each loses its secret and keeps the rest of the sentence.

Passwords labelled in other languages, English prose ("reset the password to X"), labels with a
suffix (`private_key_id`), unlabelled random tokens, 2FA backup codes, provider keys, `curl -u`,
XML elements and Markdown table columns. Look-alikes (versions, hashes, identifiers) stay.
"""

from __future__ import annotations

import pytest

from octygraph.safety.secrets import redact_secrets

# (kind, text, secret, kept)
CASES = (
    # A password by its shape alone, whatever the language around it.
    (
        "shape-es",
        "La contraseña del servidor de correo mail.example.es es Vb7#qZ2mLx9w; lo administra Carlos.",
        "Vb7#qZ2mLx9w",
        "lo administra Carlos",
    ),
    (
        "shape-quoted",
        "Ivan's script runs sqlcmd -U sa -P 'Bw9$kZ3xMq7v' nightly.",
        "Bw9$kZ3xMq7v",
        "nightly",
    ),
    # A key with a slash in it is one value, not a user / password pair.
    (
        "slashed-key",
        "Raj set up the IAM user: secret ObT/DqhQohvlyMPxBjko0bhGCZJv2fTR1d52JqmH.",
        "ObT/",
        "Raj set up the IAM user",
    ),
    # A value that holds `&` goes whole; a query parameter after `&` is not part of it.
    ("ampersand", "PASSWORD=rsF$u8B&JI&v1H0 is the staging one", "JI&v1H0", "is the staging one"),
    (
        "query",
        "The callback is https://x.example/cb?token=abc123def456&page=2",
        "abc123def456",
        "&page=2",
    ),
    # Passwords labelled in other languages.
    (
        "de",
        "Raj verwaltet den Server, das Passwort ist !jTQhdC3tN#",
        "jTQhdC3tN",
        "das Passwort ist",
    ),
    (
        "de-colon",
        "Zugang: Benutzer test, Kennwort: WFhCDz-V&B4vf*",
        "WFhCDz-V",
        "Benutzer test, Kennwort:",
    ),
    ("fr", "Tom gère la base, le mot de passe est mRdK4-pvXe", "mRdK4-pvXe", "le mot de passe est"),
    (
        "fr-mdp",
        "Accès Pritchard : identifiant admin, mdp SS-wL2exzJrbP8%",
        "wL2exzJrbP8",
        "identifiant admin, mdp",
    ),
    (
        "es",
        "Fatima administra el servidor; la contraseña es JgGg2u%-kT",
        "JgGg2u",
        "la contraseña es",
    ),
    ("es-clave", "La clave del router es Qz7-mPw2xL", "Qz7-mPw2xL", "La clave del router es"),
    ("pt", "O banco Sterling é do Dana, a senha é Yi_GxX8PI&uj", "Yi_GxX8PI", "a senha é"),
    (
        "it",
        "Il server è gestito da Tom, la password è 4o0S$DIeGPb4L@tP",
        "4o0S$DIeG",
        "la password è",
    ),
    (
        "nl",
        "Peter beheert Vanterpool; het wachtwoord is 8bP3%%VwOto-lfV",
        "8bP3",
        "het wachtwoord is",
    ),
    ("pl", "Serwer Whitaker prowadzi Sven, hasło to vk8cZ@f2XeeI8Uk2", "vk8cZ", "hasło to"),
    ("ru", "Сервер Albright ведёт Omar, пароль MY.95akKuI", "95akKuI", "Omar, пароль"),
    (
        "ja",
        "Brennanの環境はMariaが管理していて、パスワードは8W.kGMSIH$Q66Hです",
        "kGMSIH",
        "パスワードは",
    ),
    ("zh", "Brennan 的数据库密码是Xk29!pLm4q，别外传", "Xk29", "密码是"),
    ("ko", "서버 비밀번호는 Gh7$kLp2Qw 입니다", "Gh7$kLp2Qw", "비밀번호는"),
    ("sv", "Priya sköter Cornwall-databasen, lösenordet är i.sQzS&ty0Ed", "sQzS", "lösenordet är"),
    ("tr", "Devereux sunucusunu Maria yönetiyor, şifre P$NjSwod0i", "NjSwod0i", "yönetiyor, şifre"),
    ("fi", "Palvelimen salasana on Vx8#kPq2Lm", "Vx8#kPq2Lm", "salasana on"),
    ("da", "Routerens adgangskode er Rt5&mWq9Zp", "Rt5&mWq9Zp", "adgangskode er"),
    ("cs", "Heslo je Pq4!zXw8Lm pro server", "Pq4!zXw8Lm", "pro server"),
    ("hu", "A jelszó: Kj3#vNm8Qx", "Kj3#vNm8Qx", "A jelszó:"),
    # English prose.
    (
        "prose-pass",
        "Chloe set up the Blanchard NAS, user admin pass 97xlgESXFg",
        "97xlgESXFg",
        "user admin pass",
    ),
    (
        "prose-pass-and",
        "The kiosk login is kiosk and pass qFrkGQCUp7TJ if anyone asks.",
        "qFrkGQCUp7TJ",
        "if anyone asks",
    ),
    ("prose-pw", "Valentino Jenkins: user dana, pw: c&tYm$wz2hq", "tYm$wz2hq", "user dana, pw:"),
    (
        "slash-root",
        "For the router use root / pB*s23k-D5*Xx (ask Priya first).",
        "s23k-D5",
        "use root / ",
    ),
    (
        "login-with",
        "Log into the Dalgleish console as aiko with vXnt2sqLKOjq5x.",
        "vXnt2sqLKOjq5x",
        "as aiko with",
    ),
    (
        "shared-secret",
        "The shared secret for the Fairchild RADIUS server is N&c8O$Y!oYS5mkF; Dana keeps it.",
        "oYS5mkF",
        "Dana keeps it",
    ),
    (
        "wifi-key",
        "The office Wi-Fi is Garrity-Guest and the key is NwDOxmcW21pjX.",
        "NwDOxmcW21pjX",
        "Garrity-Guest and the key is",
    ),
    (
        "reset-to",
        "Luis reset the Kirkpatrick admin password to w%UPEDIK8uPfg yesterday.",
        "UPEDIK8uPfg",
        "yesterday",
    ),
    (
        "changed-to",
        "btw Omar changed the staging password to miT2G4Japjqq5H, update your notes",
        "miT2G4Japjqq5H",
        "update your notes",
    ),
    (
        "app-key-hex",
        "Aiko's Datadog application key for the Mortimer dashboards is b2ce8c430acf775fb98d344a5acf8cc423426eb0.",
        "b2ce8c430acf775fb98d",
        "Mortimer dashboards is",
    ),
    # Labels with a suffix.
    (
        "key-id",
        'The key file has "private_key_id": "9884c7bafb9652f0f109efd9de624d0f00c7de35".',
        "9884c7bafb96",
        '"private_key_id": ',
    ),
    (
        "secret-value",
        "Set client_secret_value=Zq8xPm2Lw9Kc in the portal.",
        "Zq8xPm2Lw9Kc",
        "client_secret_value=",
    ),
    # Random-looking tokens without a label.
    (
        "ado-pat",
        "Sven uses the PAT krhulycnp8ljo8tdosr2rsn056md6l6zl3ryp2yiow0out2x7b3k for the pipelines.",
        "krhulycnp8ljo8",
        "for the pipelines",
    ),
    (
        "lower-token",
        "Pipelines run with krhulycnp8ljo8tdosr2rsn056md6l6zl3ryp2yiow0out2x7b3k daily.",
        "krhulycnp8ljo8",
        "run with",
    ),
    (
        "hmac-hex",
        "The Cavendish HMAC key is 8b2cb71714bf401808d36c3d906ddc1c0b2bd6310611948c7cea38017e576862",
        "8b2cb71714bf",
        "HMAC key is",
    ),
    (
        "totp-seed",
        "The Osei TOTP seed is 2OHRNC5UOLS75EPCUVRDGO32K2D32CRK; Luis has it too.",
        "2OHRNC5UOLS75",
        "Luis has it too",
    ),
    (
        "base32-long",
        "Add 2OHRNC5UOLS75EPCUVRDGO32K2D32CRK to the authenticator app.",
        "2OHRNC5UOLS75",
        "to the authenticator app",
    ),
    # 2FA backup and recovery codes.
    (
        "backup-codes",
        "Peter's GitHub backup codes are 95306-99795 59791-62586 55408-65954 33054-36025",
        "59791-62586",
        "backup codes are",
    ),
    (
        "recovery-codes",
        "Recovery codes for the AWS root: wxbs-22uj, d8vb-u9qa, a5jb-s44e, g98g-cetz",
        "d8vb-u9qa",
        "for the AWS root:",
    ),
    # Provider keys.
    (
        "langsmith",
        "Traces go to LangSmith with 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.",
        "905672ba9f45d3",
        "to LangSmith with",
    ),
    (
        "airtable",
        "Synced from Airtable using patUxX1NpTFHH6hLw.0137fd4caf7bd0632d1c8ee4fcda5e40a13b3d01112d6fb3b729ce8251e77572",
        "patUxX1NpTFHH6hLw",
        "from Airtable using",
    ),
    (
        "fcm",
        "Push uses FCM server key AAAAJQIQPq0:APA91bfxboFifk8YxZLQAt-HxxYMiGWcv7xUMkKAmJvP8vhmJfs5V0WIgUwaMNCnAGYiK7CferKa9tDdVP4jhrKZ-08sf6XmOAHEaaGQ5znvnBDvESriox39zROSOmYucgYmm29dsZpi.",
        "AAAAJQIQPq0",
        "FCM server key",
    ),
    # curl, XML, Markdown tables.
    (
        "curl-u",
        "Check it with curl -u elastic:5VFvmVqmg6b https://es.thorne:9200",
        "5VFvmVqmg6b",
        "curl -u elastic:",
    ),
    (
        "curl-user",
        "curl --user deploy:Hq7zLx2Pwm https://ci.acme.io/api",
        "Hq7zLx2Pwm",
        "--user deploy:",
    ),
    (
        "xml",
        "The server entry has <username>deploy</username><password>mpvapgB2Orw9#n@</password>",
        "mpvapgB2Orw9",
        "<username>deploy</username><password>",
    ),
    (
        "xml-token",
        "<config><apiToken>Tk9xLm2PqW7z</apiToken></config>",
        "Tk9xLm2PqW7z",
        "</apiToken></config>",
    ),
    (
        "md-table",
        "| service | user | password |\n|---|---|---|\n| Arkwright | admin | ea3xvLzcZd8RLvc |",
        "ea3xvLzcZd8RLvc",
        "| Arkwright | admin |",
    ),
    # A pair named long after its cue, when the words lead straight in ("... is user / password").
    (
        "pair-far-cue",
        "The HTTP auth in front of grafana.internal.example.net, which Omar maintains, is "
        "ops / Tiber9-Lantern!",
        "Tiber9-Lantern",
        "which Omar maintains, is ops /",
    ),
    ("passcode", "The passcode for the Webex account is 5tRk9wQe.", "5tRk9wQe", "Webex account"),
    ("pin", "The HSM admin PIN is 48213907 and Ingrid keeps the card.", "48213907", "Ingrid"),
    ("door-code", "Door code for the server room, managed by Kofi: 5821", "5821", "Kofi:"),
    (
        "wifi",
        "Guest Wi-Fi at the Lyon office is Tomas's; WPA3 passphrase harbor-Bl1nk-2214",
        "harbor-Bl1nk-2214",
        "Tomas's",
    ),
    (
        "pgpass",
        ".pgpass on the reporting box: reports-db.internal:5432:analytics:report_reader:Hq8vN3zLp0Wd",
        "Hq8vN3zLp0Wd",
        "reports-db.internal:5432:analytics:report_reader:",
    ),
    (
        "recovery-codes-far",
        "Recovery codes for the npm org owner login (Jonas keeps them in the safe): "
        "7be21-9f0c4 a83d2-51e6b",
        "9f0c4",
        "Jonas keeps them",
    ),
    (
        "scratch-codes-spaced",
        "Scratch codes for the shared AWS root account, which Farah looks after: 2291 8830, 4417 0925",
        "4417",
        "Farah looks after",
    ),
    ("unlocks-with", "The demo Pixel in Ana's desk unlocks with 481529.", "481529", "Ana's desk"),
    ("puk", "Marco keeps the on-call SIM; its PUK is 61730495.", "61730495", "Marco keeps"),
    (
        "bare-pin",
        "The signing token that Femi manages has admin PIN 308817.",
        "308817",
        "Femi manages",
    ),
    ("dashed-code", "The locker keypad code is 7-3-1-8, ask Dee.", "7-3-1-8", "ask Dee"),
    (
        "one-recovery-code",
        "The Fastly account is Ken's; its 2fa recovery code 8rt2-kq71-zz4m is in the envelope.",
        "8rt2-kq71",
        "in the envelope",
    ),
    (
        "grouped-seed",
        "Mona owns the VPN; the TOTP seed is JBSW Y3DP EHPK 3PXP.",
        "Y3DP EHPK",
        "Mona owns the VPN",
    ),
    (
        "psk",
        "The lab's IoT network is Sam's; its PSK is Gr33n-Lab-Mesh!",
        "Gr33n-Lab-Mesh",
        "Sam's",
    ),
    (
        "session-cookie",
        "Ops owns the admin panel; my sessionid=9fk2m1x8q7z3v5b6n4c0 works for now.",
        "9fk2m1x8q7z3v5b6n4c0",
        "works for now",
    ),
    (
        "named-session-cookie",
        "the kibana_session cookie 3c9e1a7f5b2d8c4e6a0f gets me in",
        "3c9e1a7f5b2d8c4e6a0f",
        "gets me in",
    ),
    (
        "keytool",
        "Ravi owns signing: keytool -list -keystore app.jks -storepass Tq8vLm2xPz",
        "Tq8vLm2xPz",
        "-storepass",
    ),
    (
        "passphrase-assign",
        "The bench AP config has wpa_passphrase=Lm4kQz8vRt",
        "Lm4kQz8vRt",
        "wpa_",
    ),
    (
        "webhook-path",
        "Support owns the intake hook https://hooks.example.io/hooks/catch/88123/x7kq29p/ for forms",
        "x7kq29p",
        "for forms",
    ),
    (
        "webhook-key",
        "Ops set up https://events.example.com/integration/a81f0c9d2b7e4411/enqueue for alerts",
        "a81f0c9d2b7e4411",
        "for alerts",
    ),
    (
        "pin-long-aside",
        "The PUK for the spare SIM in the Leeds office router drawer is 55102938, ask Ola.",
        "55102938",
        "ask Ola",
    ),
    (
        "one-backup-code-digits",
        "A backup code for the billing login, in case Ivo is away: 40917733",
        "40917733",
        "Ivo is away",
    ),
    (
        "spaced-pair-symbols",
        "The wiki box is run by Ana (ask her first), login is wiki-admin / Qa7%.k@Lm2.x",
        "Qa7%.k@Lm2.x",
        "login is wiki-admin /",
    ),
    (
        "prose-quoted-being",
        "After months of back and forth the shared password ended up being 'Vw3nRt8qLz'",
        "Vw3nRt8qLz",
        "ended up being",
    ),
    (
        "jarsigner",
        "Lea signs with jarsigner -storepass Kp2vXm9qLt app.apk",
        "Kp2vXm9qLt",
        "app.apk",
    ),
    ("de-hyphen", "Das Admin-Passwort lautet Hq4!zTr8Lm, Jan betreut es.", "Hq4!zTr8Lm", "Jan"),
    (
        "combination",
        "The spare laptops are in cabinet 3, combination 7-22-15; IT owns it.",
        "7-22-15",
        "IT",
    ),
    (
        "pin-aside",
        "The badge PIN for the lab door (the one Ola set up last spring) is 48201937",
        "48201937",
        "Ola set up",
    ),
    ("quoted-pin", 'Our voicemail PIN, if the line fills up, is "590213".', "590213", "line fills"),
    (
        "two-group-code",
        "One of the npm recovery codes for the bot account (Jo keeps the rest) is 7f3a2-90c1d",
        "7f3a2-90c1d",
        "Jo keeps the rest",
    ),
    ("psk-assign", 'network={ ssid="Lab" psk="Tz8kQ2mWp4Lx" }', "Tz8kQ2mWp4Lx", 'ssid="Lab"'),
    (
        "wifi-qr",
        "The QR says WIFI:T:WPA;S:Guest;P:Rb7mKq2zTw;; for guests",
        "Rb7mKq2zTw",
        "S:Guest;",
    ),
    (
        "cookie-gap",
        "If SSO is down, this JSESSIONID still works: 9A7C1E5B3D2F4A6C8E0B",
        "9A7C1E5B3D2F4A6C8E0B",
        "still works",
    ),
    (
        "cookie-named",
        "the auth cookie is .AspNetCore.Cookies=CfDJ8Qx2mZ7kLp4Rt9vWb3",
        "CfDJ8Qx2mZ7kLp4Rt9vWb3",
        ".AspNetCore.",
    ),
    # Vendor formats: Sentry, Discord, Mercado Pago, DeepL.
    (
        "sentry-org-token",
        "sentry-cli uses sntrys_eyJpYXQiOjE3MzAwMDAwMDAuNSwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8ifQ_Zk3+q9Lm2Rt7Vw for uploads",
        "Zk3+q9Lm2Rt7Vw",
        "for uploads",
    ),
    (
        "discord-bot",
        "bot.run('MTA5ODc2NTQzMjEwOTg3NjU0Mw.Gh7Kx2.Qw8eRt5yUi9oPa3sDf6gHj1kLz4xCv7bNm2QaZ') fails",
        "Qw8eRt5yUi9oPa3sDf6gHj1kLz4xCv7bNm2QaZ",
        "fails",
    ),
    (
        "mercadopago",
        "token de prod: APP_USR-1234567890123456-052311-0a1b2c3d4e5f60718293a4b5c6d7e8f9-123456789 ok",
        "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "token de prod",
    ),
    (
        "deepl",
        "DeepL answers 403 with 4f1d2c3b-5a6e-4b7c-8d9e-0f1a2b3c4d5e:fx, is the plan expired?",
        "4f1d2c3b-5a6e",
        "is the plan expired?",
    ),
    # A label in another language, several words before its verb.
    (
        "far-fr",
        "le mot de passe du compte de service sur la préprod c'est Fromage77! merci",
        "Fromage77!",
        "merci",
    ),
    (
        "far-it",
        "la password dell'account ftp del fornitore è Girasole2022, puoi scriptare il download?",
        "Girasole2022",
        "puoi scriptare il download?",
    ),
    (
        "far-de-key",
        "Der API-Schlüssel für das neue Wetter-Konto lautet wx7Kp2Qm9Rt4Vb8N, bitte einbauen.",
        "wx7Kp2Qm9Rt4Vb8N",
        "bitte einbauen",
    ),
    (
        "ru-ot",
        "пароль от почты релизов — Volga1999!, логин releases",
        "Volga1999!",
        "логин releases",
    ),
    ("misspelt", "pasword on the old jenkins box is tiger2019 fyi", "tiger2019", "fyi"),
    ("snmp", "the switches answer to community string s3cr3t-ro only", "s3cr3t-ro", "only"),
    ("redis-quoted", "masterauth is set to `lemonade` on the replicas", "lemonade", "replicas"),
    (
        "word-digits",
        "the kiosk password is marmalade42 until Friday",
        "marmalade42",
        "until Friday",
    ),
    (
        "digits-only",
        "the BIOS password is 19880412 on every lab machine",
        "19880412",
        "lab machine",
    ),
    # Command lines: a password flag after a user flag, Samba's user%password, bundler, keychains.
    ("u-p", "ipmi-reset -u operator -p lavender now", "lavender", "now"),
    ("U-P", "ipmitool -H 10.0.0.9 -U ADMIN -P Kx9vT2mq power on", "Kx9vT2mq", "power on"),
    ("smb", "smbclient //nas/media -U 'HOME\\anna%Tulip&Rose8' -c ls", "Tulip&Rose8", "-c ls"),
    (
        "bundler",
        "bundle config gems.vendor.io a1b2c3d4:e5f6a7b8 then bundle install",
        "e5f6a7b8",
        "then bundle install",
    ),
    (
        "keychain",
        "security unlock-keychain -p 'Maple&Syrup' build.keychain",
        "Maple&Syrup",
        "build.keychain",
    ),
    # PINs and codes by their labels.
    ("sim-pin", "the sim pin of the QA iPhone is 7351", "7351", "QA iPhone"),
    # A label says what the code unlocks; with or without "is" before the number.
    ("yubikey-pin", "my yubikey pin 482913 is on the sticky note", "482913", "sticky note"),
    (
        "app-password-far-colon",
        "google gave me an app password for the SMTP relay: obsk rpma pqba gutr, keep the spaces?",
        "pqba gutr",
        "keep the spaces?",
    ),
    (
        "conf-key-value",
        "[OUTPUT]\n    Name         splunk\n    Splunk_Token 64fe837d-53e3-488c-be37-09eadb8281a6\n    TLS On",
        "64fe837d-53e3",
        "Splunk_Token",
    ),
    ("locker-code", "the locker code 5821 opens the cabinet", "5821", "opens the cabinet"),
    ("user-pin-is", "the kiosk user pin is 778812 for now", "778812", "for now"),
    ("pin-bracket", "my smartcard PIN (582046) expires soon", "582046", "expires soon"),
    ("recovery-bracket", "one backup code left (k3m9-x2p7), what now?", "k3m9-x2p7", "what now?"),
    (
        "authenticator",
        "my authenticator shows 493027 for the root account",
        "493027",
        "root account",
    ),
    # Variables and files named for a secret, then what they hold.
    (
        "env-is",
        "HEROKU_API_TOKEN is 8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a and it still 401s",
        "8d7c6b5a",
        "401s",
    ),
    (
        "file-contains",
        "config/master.key contains 2f4e6a8c0b1d3f5e7a9c0b2d4f6e8a1c, right?",
        "2f4e6a8c",
        "right?",
    ),
    (
        "mnemonic-env",
        'DEPLOYER_MNEMONIC="pear cloud ridge amber lotus violin" in .env',
        "ridge amber",
        "in .env",
    ),
    (
        "app-password",
        "smtp.password=abcd efgh ijkl mnop in application.properties",
        "efgh ijkl",
        "application",
    ),
    (
        "php-define",
        "define( 'AUTH_SALT', 'q8#Lm2@vX9' ); is in wp-config",
        "q8#Lm2@vX9",
        "wp-config",
    ),
    # Passphrases of several words, quoted or not; security answers.
    (
        "quoted-phrase",
        'ssh asks for my passphrase after each reboot; it\'s "seven silver spoons" and I am tired of it',
        "seven silver spoons",
        "I am tired of it",
    ),
    (
        "bare-phrase",
        "the age key's passphrase is mango river sunset glass, how do I script decrypting?",
        "mango river sunset glass",
        "how do I script",
    ),
    (
        "wifi-phrase",
        "office wifi passphrase quietlibrarymornings for the printers",
        "quietlibrarymornings",
        "printers",
    ),
    (
        "security-answer",
        "the security answer for the registrar account is Blue Harbour Lane, don't ask",
        "Blue Harbour Lane",
        "don't ask",
    ),
    # A user and a password joined by words, or a password said of "it".
    ("and-pair", "my creds are mhansen and Fjord!2024 for the VPN", "Fjord!2024", "VPN"),
    (
        "with-pair",
        "the CI login is ci-bot@example.org with Quartz-Lamp9 today",
        "Quartz-Lamp9",
        "today",
    ),
    (
        "changed-it",
        "the router used to be admin/admin, we changed it to Nebula77Gate.",
        "Nebula77Gate",
        "router",
    ),
    ("account-slash", "the nas web ui is admin/spring2025 for now", "spring2025", "for now"),
    # A user named, then its password after "with" or "using"; Oracle's user/password@db.
    (
        "user-with",
        "user reporting_ro with Marlin_2031 can't see the views",
        "Marlin_2031",
        "the views",
    ),
    (
        "admin-is-with",
        "the camera admin (10.0.4.2) is root with Fl4sh!Bulb.",
        "Fl4sh!Bulb",
        "camera admin",
    ),
    (
        "account-using",
        "the NAS account is 'backup' using Otter_River88 nightly",
        "Otter_River88",
        "nightly",
    ),
    ("oracle", "sqlplus hr/Cedar_1985@//db1:1521/XE hangs", "Cedar_1985", "hangs"),
    ("rdp-as", "RDP into 10.1.2.3 as .\\builder using Kiln7Fire! today", "Kiln7Fire!", "today"),
    ("mqtt", "mosquitto_sub -u sensors -P 'Dew#Point4' -t t fails", "Dew#Point4", "fails"),
    # A secret's name, then a key-like value with no separator.
    (
        "bare-key-secret",
        "key_secret `Qz8Lm2Rt7Vw4Xy9Nb3Kp6Hd` for test mode",
        "Qz8Lm2Rt7Vw4Xy9Nb3Kp6Hd",
        "test mode",
    ),
    (
        "bare-private-key",
        "private key 9f8e7d6c5b4a39281706f5e4d3c2b1a0 for the sandbox",
        "9f8e7d6c",
        "sandbox",
    ),
    (
        "mapbox",
        "MAPBOX is sk.eyJ1IjoidGVhbSIsImEiOiJjbHh5ejEyMyJ9.Qw8eRt5yUi9oPa3sDf6gHj now",
        "Qw8eRt5y",
        "now",
    ),
    (
        "pl-bracket",
        "Hasło do panelu (Plesk) to Wisla!2020, login: admin",
        "Wisla!2020",
        "login: admin",
    ),
    ("vi", "Mật khẩu của máy chủ thử là Saigon#77 nhé", "Saigon#77", "nhé"),
    ("hi", "स्टेजिंग का पासवर्ड Ganga@2001 है", "Ganga@2001", "है"),
    # Firmware macros, game-server flags, passwords in brackets or backticks with a final "!".
    (
        "c-define",
        '#define MQTT_PASS "orchard_lane_2004"\n#define PORT 1883',
        "orchard_lane",
        "PORT 1883",
    ),
    ("flag-quoted", '+rcon.password "Hx7pQ2mZ9kLw" +rcon.web 1', "Hx7pQ2mZ9kLw", "+rcon.web 1"),
    ("backtick-bang", "the old admin still had `Autumn2019!` set", "Autumn2019", "set"),
    ("bracketed", "camera login is viewer [Lens#42Snap] for now", "Lens#42Snap", "for now"),
    (
        "supposed-to-be",
        "is APP_SIGNING_KEY supposed to be 7d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6?",
        "7d1e2f3a-4b5c",
        "supposed to be",
    ),
    ("licence", "the licence key is (QWER7-TY8UI-OP9AS-DF0GH-JK1LZ), seats?", "TY8UI", "seats?"),
    ("serial-flag", "editor -batchmode -serial XY-1234-ABCD-EFGH-IJKL -quit", "ABCD-EFGH", "-quit"),
    ("key-call", 'Client(APIKey("4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b"))', "4e5f6a7b8c9d", "Client("),
    (
        "buildkite",
        "mine is bkua_0123456789abcdef0123456789abcdef01234567 ok",
        "0123456789abcdef",
        "ok",
    ),
    (
        "phrase-after-path",
        'the passphrase for ~/.ssh/ci_key is "four quiet owls waiting" if asked',
        "four quiet owls",
        "if asked",
    ),
    # Build files, login calls, a far label before a colon, a value in brackets, a Chinese verb.
    (
        "gradle",
        'storePassword "Sp1ce-Route9"\nkeyAlias "upload"',
        "Sp1ce-Route9",
        'keyAlias "upload"',
    ),
    (
        "login-call",
        'mqtt.connect("node-7", "sensor", "Fern#Gully42") fails',
        "Fern#Gully42",
        "fails",
    ),
    (
        "client-call",
        "Client('AC0a', '9b8a7c6d5e4f30211f2e3d4c5b6a7980') # sms",
        "9b8a7c6d",
        "# sms",
    ),
    (
        "client-call-upper-hex",
        "Client('AC0a', '9B8A7C6D5E4F30211F2E3D4C5B6A7980') # sms",
        "9B8A7C6D",
        "# sms",
    ),
    (
        "far-colon",
        "senha do roteador do escritório do andar 3: Brisa#Mar21, valeu",
        "Brisa#Mar21",
        "valeu",
    ),
    (
        "pass-bracket",
        "the backup pass (restic-0ff51te-2022) is in my notes",
        "restic-0ff51te",
        "my notes",
    ),
    (
        "zh-verb",
        "生产环境的 Secret 是 Qm8Zr2Lp7Vx4Nt9Kw3Hy 请配置",
        "Qm8Zr2Lp7Vx4Nt9Kw3Hy",
        "请配置",
    ),
    # A call that reads a secret is code (kept); a literal handed to the call is still a secret.
    (
        "default-of-a-lookup",
        'db_password = os.getenv("DB_PASSWORD", "Xk9mP2vLq7")',
        "Xk9mP2vLq7",
        'os.getenv("DB_PASSWORD"',
    ),
    (
        "literal-in-a-constructor",
        'password = SecretStr("Tr0ub4dor&3")',
        "Tr0ub4dor&3",
        "SecretStr(",
    ),
    (
        "secret-key-after-its-label",
        "the secret key is sk_live_51HqLyjWDarjtT1zdp7dcXeY2ziGmSnRbhTZ2yq, keep it out of the page",
        "sk_live_51Hq",
        "keep it out",
    ),
    (
        "typed-assignment",
        'token: str = "a8F3kLm9Qz2Xw7Rt"',
        "a8F3kLm9Qz2Xw7Rt",
        "token: str",
    ),
    (
        "snmp-community-flag",
        "snmpget -v2c -c wh1te-r4bbit 192.168.4.20 sysUpTime.0 times out",
        "wh1te-r4bbit",
        "sysUpTime.0",
    ),
    (
        "password-piped-to-stdin",
        "echo 'quartz-Lamp77' | podman login registry.acme.dev -u ci --password-stdin",
        "quartz-Lamp77",
        "--password-stdin",
    ),
    (
        "docker-hub-token",
        "the CI uses dckr_pat_Q3vLx9ZrT8mKw2PbYc7NdA4fHs for pulls",
        "dckr_pat_Q3vLx9",
        "for pulls",
    ),
    (
        "expect-answering-a-prompt",
        '#!/usr/bin/expect\nspawn sudo -k true\nexpect "*password for*"\nsend "Lantern\\$42x\\r"\ninteract',
        "Lantern",
        "spawn sudo",
    ),
    (
        "code-changed-to",
        "the alarm code was changed to 730215 after the move",
        "730215",
        "after the move",
    ),
    (
        "key-id-after-its-label",
        "our service account's private_key_id 4c1f0e9a7b2d3c5e6f8091a2b3c4d5e6f7a8b9c0 must be rotated",
        "4c1f0e9a7b2d3c5e6f8091a2b3c4d5e6f7a8b9c0",
        "must be rotated",
    ),
    (
        "printed-by-cat",
        "$ cat deploy/signing.key\nQm9vbXRvd25IYXJib3I5OTk3\n$ ls",
        "Qm9vbXRvd25IYXJib3I5OTk3",
        "cat deploy/signing.key",
    ),
    (
        "decoded-from-a-secret",
        "kubectl -n grafana get secret grafana-admin -o jsonpath='{.data.pw}' | base64 --decode\nMeadow7Finch",
        "Meadow7Finch",
        "base64 --decode",
    ),
    (
        "key-decoded-from-a-literal",
        "secret_key = bytes.fromhex('7d1e5a9c3b0f48e2a6c4d8b0f2e4a6c8d0b2f4e6a8c0d2e4')",
        "7d1e5a9c3b0f48e2",
        "bytes.fromhex(",
    ),
    (
        "passphrase-flag",
        "gpg --batch --pinentry-mode loopback --passphrase 'amber fox under ice' -d backup.gpg",
        "amber fox under ice",
        "-d backup.gpg",
    ),
    (
        "archive-password-attached",
        "7za x -pGlacier.Moss7 site-backup.7z -o/srv/restore",
        "Glacier.Moss7",
        "site-backup.7z",
    ),
    (
        "client-constructed-with-a-key",
        "sms = Vonage::Client.new('a1b2c3d4', 'Zq8Rw2Lm5Tx9Pv3K')",
        "Zq8Rw2Lm5Tx9Pv3K",
        "Vonage::Client.new(",
    ),
    (
        "password-before-what-it-is-for",
        "use Harbor_7731 to log in as admin on the NAS until Friday",
        "Harbor_7731",
        "to log in as admin",
    ),
    (
        "security-answer",
        "the security question asks for my first pet and I put Biscuitte",
        "Biscuitte",
        "my first pet",
    ),
    (
        "key-label-with-an-aside",
        "HMAC key for the webhooks (hex, 32 bytes): 9f2c7a61d04be8359a7c1e66f0d2b84a3c5e917d20fa6b48c3d1e7a9b5f02c68",
        "9f2c7a61d04be835",
        "HMAC key for the webhooks",
    ),
    # A password said alone in a chat, a few lines after someone asked for it.
    (
        "chat-reply",
        "Me: the router admin page wants a password\nAlex: try the one on the sticker\n"
        "Me: nope, 'invalid credentials'\nAlex: oh right I changed it last week\n"
        "Alex: Pelican_4410\nMe: in, thanks",
        "Pelican_4410",
        "Me: in, thanks",
    ),
    (
        "url-without-colon",
        "sqlalchemy.exc.ArgumentError: Could not parse SQLAlchemy URL from string "
        "'postgresql+psycopg2//etl:Qm4vT8zLp2Rw@pg-main.internal:5432/etl'",
        "Qm4vT8zLp2Rw",
        "Could not parse SQLAlchemy URL",
    ),
    (
        "chat-timestamped",
        "[09:12] dana: what's the pw for the build box?\n[09:13] raj: Kestrel-88-blue\n"
        "[09:13] dana: ty",
        "Kestrel-88-blue",
        "dana: ty",
    ),
    (
        "cli-auth",
        "$ snyk auth 7c1e2a90-4b3d-4e8f-9a6b-2d5c8e1f0a34\nYour account has been authenticated.",
        "7c1e2a90-4b3d",
        "Your account has been authenticated.",
    ),
    (
        "cli-authtoken",
        "ngrok authtoken 2Xk9pQ7rLm3vT8wZ1yB4nC6dF0gH5j",
        "2Xk9pQ7rLm3vT8wZ1yB4",
        "ngrok",
    ),
    (
        "wallet-accounts",
        'sepolia: { url: RPC_URL, accounts: ["0x'
        + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
        + '"] }',
        "4c0883a69102937d",
        "sepolia",
    ),
    (
        "seed-next-line",
        "Recovery phrase for the test wallet, never commit it:\n"
        "orbit lemon ladder frost pupil canvas minor amber slogan weekend blade arrow",
        "orbit lemon ladder",
        "never commit it",
    ),
    (
        "ldap-bind",
        "ldapmodify -x -D 'cn=admin,dc=example,dc=org' -w 'Zt8#qLm2Vx' -f change.ldif",
        "Zt8#qLm2Vx",
        "-f change.ldif",
    ),
    (
        "csv-secret-column",
        "Login,Password,Sign-in URL\nr.ng,Wq7$Lm2#Zx9p,https://portal.example.com/login",
        "Wq7$Lm2#Zx9p",
        "https://portal.example.com/login",
    ),
    (
        "numbered-backup-codes",
        "Backup verification codes for ops@example.com\n1. 4821 9930    2. 1174 6021\n"
        "3. 5502 8816    4. 7730 2294\nKeep them somewhere safe.",
        "4821 9930",
        "Keep them somewhere safe.",
    ),
    (
        "setup-key-groups",
        "Could not scan the QR code, so typed the setup key: kq4m 7zpw h2rx v9tn bd3c fy8e",
        "kq4m 7zpw",
        "Could not scan the QR code",
    ),
    (
        "numbered-seed",
        "Hardware wallet, cold storage:\n"
        + "  ".join(
            f"{n}. {w}"
            for n, w in enumerate(
                "maple orbit vivid sauce laptop ramp civil hollow jungle mercy stamp oyster".split(),
                1,
            )
        )
        + "\nThe PIN is on the other card.",
        "vivid sauce",
        "The PIN is on the other card.",
    ),
    (
        "security-answer",
        "Recovery info for the bank:\nQ: What was the name of your first pet?\nA: Biscotti\n"
        "Q: Memorable place? (see the other note)",
        "Biscotti",
        "What was the name of your first pet?",
    ),
    (
        "keypad-code",
        "The keypad at the loading dock was reset this morning. New code is 5093# until Friday.",
        "5093",
        "until Friday",
    ),
    (
        "alarm-type",
        "- Alarm panel is behind the kitchen door: type 7716 then press OFF within 30 s",
        "7716",
        "press OFF",
    ),
    (
        "new-one",
        "Rotated the root password on the NAS today. New one: copper-meadow-vault-ripple",
        "copper-meadow-vault-ripple",
        "Rotated the root password on the NAS today.",
    ),
    (
        "passphrase-line-end",
        "<mira> the deploy key is at ~/.ssh/deploy_ed25519\n<mira> passphrase: amber kettle 72 "
        "falcon\n<jon> thanks, ssh-add worked",
        "kettle 72 falcon",
        "ssh-add worked",
    ),
    (
        "scheme-word",
        'curl -H "Authorization: Graylog 7E21AC9B-55D0-4F3A-9B1C-0D2E6F8A1B3C" https://logs.internal/api',
        "7E21AC9B-55D0",
        "https://logs.internal/api",
    ),
    (
        "seed-same-line",
        "Hot wallet for the faucet (testnet only, mostly): seed: "
        "lantern quiver almond basket timber velvet orchid pepper hollow canyon ripple mango",
        "orchid pepper hollow",
        "Hot wallet for the faucet",
    ),
    (
        "key-manually",
        "No camera on this laptop, so type the code in by hand:\nq3xv mb7k 2hdz ptw4 6yce n2ra wl5s "
        "jk7f\nthen confirm with the six digits.",
        "2hdz ptw4",
        "confirm with the six digits",
    ),
    (
        "keypad-new-one",
        "Voicemail from Ana: the storeroom keypad changed, the new one's 7305*, see you Monday.",
        "7305",
        "see you Monday",
    ),
    (
        "its-after-prompt",
        "admin@10.4.0.7's password:\nPermission denied, please try again.\n"
        "(wrong terminal, never mind, it's Lagoon_Ferry_42 anyway)",
        "Lagoon_Ferry_42",
        "Permission denied, please try again.",
    ),
    (
        "chat-try",
        "[09:12] omar: what do I use to log in to the old wiki?\n[09:13] bea: try Quartz_Ledge_19",
        "Quartz_Ledge_19",
        "what do I use to log in to the old wiki?",
    ),
    (
        "byte-array-key",
        "cat deployer.json\n[" + ",".join(str((i * 37 + 11) % 256) for i in range(64)) + "]",
        ",".join(str((i * 37 + 11) % 256) for i in range(20, 30)),
        "cat deployer.json",
    ),
)


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_loses_its_secret_and_keeps_the_rest(
    kind: str, text: str, secret: str, kept: str
) -> None:
    clean, count = redact_secrets(text)
    assert secret not in clean and count >= 1, clean
    assert kept in clean, clean


LOOK_ALIKES = (
    "Let's pass the credentials to FFmpeg in the verify function.",
    "To summarize the key points from this guide:\n\n**Where Cursor stores chat data:**",
    "Recall@10 is 0.70 on LoCoMo.",
    "- **A11y-First Selectors**: deterministic waits",
    "Open https://chat.example/?apiUrl=http://localhost:2024&assistantId=graph&open=true",
    "Write to bob.Smith2@acme.io about it.",
    "AppId=67 goes in the manifest.",
    "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
    "Download the x86_64 build for Linux",
    "The hook is called useEffect2 in the new code",
    "Verify it with sha256sum dist/octygraph-1.2.0.tar.gz",
    "The run id is 3f2b8c1e-9d4a-4e7b-8a6c-1f2e3d4c5b6a",
    "Then git checkout 9f8e7d6 and rebuild",
    "It broke in commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b last week",
    "The password is stored in 1Password",
    "The password is stored in the vault",
    "The key is in the drawer",
    "The primary key is id",
    "docker run -p 8080:80 nginx",
    "We upgraded to Python 3.12.4 and numpy 2.1.0rc1",
    "The config lives in /etc/octygraph/settings.toml",
    "Write to alice.smith@example.com about it",
    "La contraseña es incorrecta",
    "Das Passwort ist abgelaufen",
    "le mot de passe est dans le coffre",
    "The token is valid for 3600 seconds",
    "She changed the password to something longer",
    "Set the API key to ${OPENAI_API_KEY} first",
    "The backup codes are stored in 1Password",
    "<key>CFBundleName</key><string>Octy</string>",
    "| name | key |\n|---|---|\n| id | primary |",
    "Run pytest -p no:cacheprovider -q",
    "The sort_key_name is created_at",
    "Pass x86_64 as the arch",
    "The key is MyClass.method",
    "The key is sha256:abcdef0123456789",
    "I noticed a spiderman pin on your purse. Is Spider-Man your favourite?",
    "Single-pass ADD-only extraction",
    "TOKENIZER_SHA256 = 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037'",
    "key = self._key(settings)",
    "la clave es fundamental",
    "SHA d2a84f4b8b650937ec8f73cd8be2c74add5a911ba64df27458ed8229da804a26 matches",
    "PIN 13 drives the status LED",
    "The GPIO pin is 17",
    "Timestamps look like 2024-03-02T10:11:12",
    "Compose maps db:5432:5432 and cache:6379:6379",
    "The Wi-Fi key rotates every quarter",
    "Users of the admin panel (admin.example.com) are alice / bob",
    "Test signup/login in the browser; if the cookie isn't sent, fix **SameSite/Secure** + CORS.",
    "PIN 2 is ground on the header.",
    "Connect the card pins to the header, pin 4 to ground.",
    "    Splunk_Token ${SPLUNK_HEC_TOKEN}",
    "auth_token required",
    "The PIN was reset in March 2024.",
    "The session cookie expires after 30 days.",
    "Django sets sessionid on login.",
    "Recovery key rotation happens every year.",
    "The TOTP secret is stored in Vault.",
    "Hash it with a secret (SHA-256 HMAC) first.",
    "Docs are at https://docs.example.com/integrations/setup-guide",
    "The webhook is https://example.com/hooks/github and Priya owns it.",
    "Read input / output from the pipe; the login is handled upstream.",
    "The lock combination changes every quarter.",
    "Cookies=true is the default in the client config.",
    "The admin-password rotates every 90 days.",
    "the docs show sk_live_xxxxxxxxxxxxxxxxxxxxxxxx as a placeholder",
    "AWS's docs use AKIAIOSFODNN7EXAMPLE as the sample key id",
    "the template has DATABASE_URL=mysql://app:password@db:3306/app",
    "send Authorization: Basic base64(client_id:client_secret) to the token endpoint",
    "add ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG7kQx2mZp9Rt4Vw8Ny3Lb6Hc1Jd5Fe0Ka7Sq2Ut9Xv ci@build",
    "the host key fingerprint is SHA256:Qm7Rt2Vw9Xy4Zb8Nc3Ld6Fh1Jk5Gp0Sa7Te2Uv9Wx4",
    "the lockfile says sha512-Zk3Qm9Rt2Vw7Xy4Bn8Lc1Df6Gh5Jk0Pa3Se7Tu2Vw9Xy4Zb8Nc3Ld6Fh1Jk5Gp0Sa7Te2Uv9W== for left-pad",
    "go.sum wants h1:Qm7Rt2Vw9Xy4Zb8Nc3Ld6Fh1Jk5Gp0Sa7Te2Uv9Wx4= for that module",
    "docker run -u 1000 -p 8080:80 web",
    "The passphrase is stored in the macOS keychain.",
    "rtsp://user:pass@camera/stream is the example in the docs",
    "the new host key is SHA256:Qm7Rt2Vw9Xy4+b8Nc3Ld6Fh1Jk5Gp0Sa7Te2Uv9Wx4, check it",
    "export GITHUB_TOKEN=$(gh auth token) before releasing",
    "set SLACK_BOT_TOKEN=<xoxb-token-from-the-vault> locally",
    "the user alice with admin rights owns the repo",
    "npm install lodash/fp@4.17.21 again",
    "OPENAI_API_KEY=sk-...your-key-here goes in the README",
    "keytool -genkeypair -storepass:env STORE_PW -keypass:file ./kp.txt",
    "refund ch_3QwErTy7uIoP9aSdFgHjKl2Z failed with card_declined",
    "パスワードは1Passwordに保存しています",
    "the password is in Bitwarden",
    "checkout uses the publishable key pk_test_51AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 in the browser",
    "set `NPM_TOKEN: ${{ secrets.NPM_TOKEN }}` in the workflow",
    "compose has `DB_PASSWORD: ${DB_PASSWORD}` from the .env",
    "Der Link „Passwort vergessen?“ führt ins Leere",
    "the CI log shows `token: ***` as expected",
    "README: STRIPE_KEY=sk_live_XXXXXXXXXXXXXXXXXXXXXXXX until you have yours",
    "CORS needs `credentials: true` on both sides",
    # Code that names a secret without holding one: a lookup, a type, a path, a mask, a time.
    "db_password = os.environ['DB_PASSWORD'] is how settings.py reads it",
    'token = getenv("GITHUB_TOKEN") at the top of the script',
    "def rotate(user: User, new_password: str) -> None:",
    "the session token expired at 2025-06-01T08:15:30Z according to the logs",
    "the settings page shows password: ●●●●●●●● until you click reveal",
    "API_TOKEN: ${API_TOKEN:?missing API_TOKEN} in the compose file",
    'match Token::Keyword("secret") in the lexer',
    "Rotate the service role key:\n\n## Steps",
    "The form sets `ApiKey := 'DEFAULT'` in InitRecord",
    "1. Get sandbox credentials:\n   - Open the developer portal",
    'resource "aws_rds_cluster" "db" {\n  master_password = var.master_password\n}',
    "the login form sets password: this.password before it posts",
    "aws secretsmanager describe-secret --secret-id arn:aws:secretsmanager:us-east-1:210987654321:secret:billing/api-Qa9Zx1",
    "Stripe shows the restricted key as rk_live_••••••••9Xq2 in the dashboard",
    "password_encryption = scram-sha-256 in postgresql.conf",
    "token_ttl = 3600 and password_min_length = 14 in the auth settings",
    'echo "$REGISTRY_PASSWORD" | docker login -u ci --password-stdin',
    "SHA256 (octygraph-1.4.0.tar.gz) = 0c5b9e7f2d4a6c8e1f3b5d7a9c2e4f6b8d0a1c3e5f7b9d2a4c6e8f0b1d3f5a7c9",
    "  - secretKey: token\n    remoteRef:\n      key: staging/api/github\n      property: token",
    "sops --age age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p secrets.yaml",
    'ETag: "4f9c2a7e1b3d5f60718293a4b5c6d7e8-3" on the multipart upload',
    "the log prints Authorization: Bearer ***redacted*** for every request",
    "the header segment eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9 says ES256",
    "SecretId: arn:aws:secretsmanager:us-west-2:345678901234:secret:ci/npm-token-AbC123",
    "type Credentials = {\n  username: string;\n  password: string;\n};",
    "VITE_POSTHOG_KEY=phc_Kq2xWm8Rt5Yp3Ls9Dn4Fv7Bh1Jc6Gz0Ne5Ua8Ti2Ow",
    "icon: url(data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7)",
    '$headers = @{ Authorization = "Bearer $env:AZDO_TOKEN" }',
    # Keys made to be shown stay, even after a label.
    "Mapbox public token for the store locator: pk.eyJ1IjoibG9jYXRvciIsImEiOiJjbDBleGFtcGxlIn0.Qw8Er4Ty6Ui2Op0As9Df1G",
    "the publishable key is pk_live_51HqLyjWDarjtT1zdp7dcXeY2ziGmSnRbhTZ2yq in the checkout page",
    # A chat that mentions a password, then a version or a variable alone on a line.
    "Sam: which version do we pin?\nAlex: v2.3.1",
    "Sam: where is the db password kept?\nAlex: ${DB_PASSWORD}",
    "password authentication failed for user reporting\nStatus: conn_4410x",
    # An ARN names where a secret is kept, also after a name that says so.
    "DB_SECRET_ARN=arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbC123",
    'password_secret_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:rds-pass-Q1w2E3"',
    # Keys made to be handed out, by where they stand.
    "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nAllowedIPs = 10.0.0.0/24",
    '<div class="g-recaptcha" data-sitekey="6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI"></div>',
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
    "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    "RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD\n-----END CERTIFICATE-----",
    "kind: SealedSecret\nspec:\n  encryptedData:\n    token: AgBy3i4OJSWK+PiTySYZZA9rO43cGDEq"
    "Ak7XyGvq+Wg6Kx0lQ9zF3mN8pR2sT5vY7bC1dE4gH6jK8lM0nP2qS4uW6xZ8==",
    "Tips go to bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq (native segwit).",
    # Encrypted values made to be committed, hashes that store no password, ids, validators.
    "db_password: ENC[AES256_GCM,data:q8Zk1mP2rT7w,iv:Yx3Lp0Qm9Zt2Rw8Vn5Kj1Hs4Gd7Fb6Nc=,"
    "tag:Wm2Qz8Lp5Xr1Tn7=,type:str]",
    "ca.crt: |\n    -----BEGIN CERTIFICATE-----\n    MIIDdzCCAl+gAwIBAgIUw8gqExGUnD+5PVe/QSn5HZZyf\n"
    "    qZ8WZGHlazFqm3iSaEnkc4SD/IlcxC648xY+wQnBnTjx\n    -----END CERTIFICATE-----",
    " 17 | ana@example.com | $2b$12$/Qk9Zp2Lm7Xw4Rt1Vn8Yc.J5Hs3Gd6Fb0Nq2Wm8Zx4Lp7Tr1Vk9Yc",
    "payment succeeded payment_intent=pi_3Qx7Lm2Zp9Wr4Tn8Vb1Kc5Hd amount=4900",
    'PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]',
    '{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {}}',
    "name,token_count,password_policy\nalice,12,strong\nbob,7,weak",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA/x1YbY8jK2Xl9e+tH4mR/Qz0Wp8sN3vF6cL1uD5oG2iE"
    "9hJ4kT7rA0bM3nV8yX2wZ6qP5sU1dF ci@runner",
    # A Google sign-in client id ships in the page; a password prompt's next line is not its value.
    "OAUTH_WEB_CLIENT=771204936611-3kq0v8n5tbx2l7w9mz4p6hr1ycd0fsja.apps.googleusercontent.com",
    "ops@db-2's password:\nConnection closed by 10.0.3.9 port 22",
    # Numbers in a list that no byte holds, and words after a colon that no seed is made of.
    "histogram: [" + ",".join(str(300 + i) for i in range(64)) + "]",
    "[11:02] kim: is the admin page up?\n[11:03] lee: yes",
)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_secrets(text) == (text, 0)
