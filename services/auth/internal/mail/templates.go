package mail

import (
	"fmt"
	"strconv"
	"strings"

	"supportplatform.dev/pkg/placeholders"
)

// Kinds of mail auth sends.
const (
	KindPasswordReset   = "password-reset"
	KindPasswordChanged = "password-changed"
)

// DefaultLanguage is the language of a mail whose recipient has none or one
// without templates.
const DefaultLanguage = "en"

type texts struct{ subject, body string }

// templates by language and kind. Bodies hold {{.Field}} placeholders of
// templateData (fill); they end without a trailing newline.
var templates = map[string]map[string]texts{
	"en": {
		KindPasswordReset: {"Reset your password",
			`Hello {{.Name}},

someone asked to reset the password of your support account {{.Email}}.
To choose a new password, open this link within {{.Minutes}} minutes:

{{.Link}}

The link works once. If you did not ask for this, ignore this mail:
your password stays as it is.`},
		KindPasswordChanged: {"Your password was changed",
			`Hello {{.Name}},

the password of your support account {{.Email}} was changed on {{.When}}.
Every session signed in before that has been signed out.

If you did not change it, reset your password at once and tell your
administrator.`},
	},
	"de": {
		KindPasswordReset: {"Passwort zurücksetzen",
			`Hallo {{.Name}},

für Ihr Support-Konto {{.Email}} wurde das Zurücksetzen des Passworts angefordert.
Um ein neues Passwort zu wählen, öffnen Sie diesen Link innerhalb von {{.Minutes}} Minuten:

{{.Link}}

Der Link funktioniert einmal. Wenn Sie das nicht angefordert haben, ignorieren
Sie diese Mail: Ihr Passwort bleibt unverändert.`},
		KindPasswordChanged: {"Ihr Passwort wurde geändert",
			`Hallo {{.Name}},

das Passwort Ihres Support-Kontos {{.Email}} wurde am {{.When}} geändert.
Alle zuvor angemeldeten Sitzungen wurden abgemeldet.

Wenn Sie es nicht geändert haben, setzen Sie Ihr Passwort sofort zurück und
informieren Sie Ihre Administration.`},
	},
	"es": {
		KindPasswordReset: {"Restablezca su contraseña",
			`Hola {{.Name}}:

alguien ha solicitado restablecer la contraseña de su cuenta de soporte {{.Email}}.
Para elegir una contraseña nueva, abra este enlace en los próximos {{.Minutes}} minutos:

{{.Link}}

El enlace funciona una sola vez. Si no lo ha solicitado, ignore este correo:
su contraseña no cambia.`},
		KindPasswordChanged: {"Su contraseña ha cambiado",
			`Hola {{.Name}}:

la contraseña de su cuenta de soporte {{.Email}} se cambió el {{.When}}.
Se han cerrado todas las sesiones iniciadas antes.

Si no la ha cambiado usted, restablezca su contraseña de inmediato e informe
a su administrador.`},
	},
	"fr": {
		KindPasswordReset: {"Réinitialisez votre mot de passe",
			`Bonjour {{.Name}},

une réinitialisation du mot de passe de votre compte support {{.Email}} a été demandée.
Pour choisir un nouveau mot de passe, ouvrez ce lien dans les {{.Minutes}} minutes :

{{.Link}}

Le lien ne fonctionne qu'une fois. Si vous n'êtes pas à l'origine de cette demande,
ignorez ce message : votre mot de passe reste inchangé.`},
		KindPasswordChanged: {"Votre mot de passe a été modifié",
			`Bonjour {{.Name}},

le mot de passe de votre compte support {{.Email}} a été modifié le {{.When}}.
Toutes les sessions ouvertes auparavant ont été fermées.

Si vous n'êtes pas à l'origine de ce changement, réinitialisez votre mot de passe
immédiatement et prévenez votre administrateur.`},
	},
}

// Languages are the languages with templates.
func Languages() []string { return []string{"de", "en", "es", "fr"} }

// Language picks the template language for a recipient's language tag
// ("de", "de-AT", "FR"), falling back to DefaultLanguage.
func Language(tag string) string {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	if _, ok := templates[base]; ok {
		return base
	}
	return DefaultLanguage
}

type templateData struct {
	Name, Email, Link, When string
	Minutes                 int
}

// fill replaces each {{.Field}} of body with that field of d; another
// placeholder is an error.
func (d templateData) fill(body string) (string, error) {
	return placeholders.Fill(body, func(key string) (string, bool) {
		switch key {
		case "Name":
			return d.Name, true
		case "Email":
			return d.Email, true
		case "Link":
			return d.Link, true
		case "When":
			return d.When, true
		case "Minutes":
			return strconv.Itoa(d.Minutes), true
		}
		return "", false
	})
}

// render returns the subject and the plain-text body of a mail.
func render(q Queued) (subject, body string, err error) {
	lang := Language(q.Language)
	t, ok := templates[lang][q.Kind]
	if !ok {
		return "", "", fmt.Errorf("mail: no template for kind %q", q.Kind)
	}
	name := q.Name
	if name == "" {
		name = q.To
	}
	d := templateData{Name: name, Email: q.To, Link: q.Link,
		When: q.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")}
	if !q.ExpiresAt.IsZero() {
		d.Minutes = int(q.ExpiresAt.Sub(q.CreatedAt).Round(minute) / minute)
	}
	body, err = d.fill(t.body)
	if err != nil {
		return "", "", fmt.Errorf("mail: template %s/%s: %w", lang, q.Kind, err)
	}
	return t.subject, body, nil
}
