package console

import (
	"net/http"

	"github.com/edgeplane/edgeplane/domains"
)

// TLS certificates: list, upload (certificate chain and private key in
// PEM), a certificate's page with its edit form (description, metadata),
// delete. The private key is never shown again; the certificate's PEM
// is.

// maxCertificateFormBytes bounds the upload form's body: the largest
// certificate chain and private key the API takes, URL-encoded at their
// worst (3 bytes a byte), and the other fields.
const maxCertificateFormBytes = 3*(domains.MaxCertificatePEMBytes+domains.MaxPrivateKeyPEMBytes+domains.MaxMetadataBytes+domains.MaxDescriptionBytes) + 4<<10

type certificatesData struct {
	nav
	List   listState
	Items  []domains.Certificate
	Form   certificateForm
	Errors map[string][]string
}

// certificateForm is the upload form. The private key typed is not sent
// back to the page when the upload is refused: a secret crosses the
// network once.
type certificateForm struct {
	CertificatePEM, Description, Metadata string
}

var certificateFields = map[string]*lines{"certificate_pem": nil, "private_key_pem": nil, "description": nil, "metadata": nil}

func (h *Handler) certificates(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showCertificates(w, r, v, http.StatusOK, certificateForm{}, nil)
}

func (h *Handler) showCertificates(w http.ResponseWriter, r *http.Request, v *visit, status int, form certificateForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"tls_certificates", h.svc.ListTLSCertificates)
	if err != nil {
		return err
	}
	st.Example = `obj.subject_common_name.endsWith(".example.com")`
	h.render(w, max(status, code), "tls_certificates", &certificatesData{nav: h.nav(v, "reserved_domains"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) uploadCertificate(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := certificateForm{CertificatePEM: f.Get("certificate_pem"), Description: f.Get("description"), Metadata: f.Get("metadata")}
	c, err := h.svc.CreateTLSCertificate(r.Context(), v.p, domains.CreateCertificateParams{CertificatePEM: form.CertificatePEM,
		PrivateKeyPEM: f.Get("private_key_pem"), Description: form.Description, Metadata: form.Metadata})
	if err != nil {
		return formFailure(err, certificateFields, func(status int, errs map[string][]string) error {
			return h.showCertificates(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Uploaded TLS certificate "+c.ID+": attach it to a reserved domain from the domain's page.")
	http.Redirect(w, r, Prefix+"tls_certificates/"+c.ID, http.StatusSeeOther)
	return nil
}

type certificateData struct {
	nav
	Cert *domains.Certificate
	Edit editState
}

func (h *Handler) certificate(w http.ResponseWriter, r *http.Request, v *visit) error {
	c, err := h.svc.GetTLSCertificate(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "tls_certificate", &certificateData{nav: h.nav(v, "reserved_domains"), Cert: c,
		Edit: editState{Description: c.Description, Metadata: c.Metadata}})
	return nil
}

func (h *Handler) editCertificate(w http.ResponseWriter, r *http.Request, v *visit) error {
	c, err := h.svc.GetTLSCertificate(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := readEdit(r)
	params := domains.UpdateCertificateParams{Description: changed(form.Description, c.Description), Metadata: changed(form.Metadata, c.Metadata)}
	if params == (domains.UpdateCertificateParams{}) {
		return h.saved(w, r, v, false, "TLS certificate", c.ID, Prefix+"tls_certificates/"+c.ID)
	}
	if _, err := h.svc.UpdateTLSCertificate(r.Context(), v.p, c.ID, params); err != nil {
		return formFailure(err, descMetaFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "tls_certificate", &certificateData{nav: h.nav(v, "reserved_domains"), Cert: c, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "TLS certificate", c.ID, Prefix+"tls_certificates/"+c.ID)
}

func (h *Handler) certificateRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"tls_certificates", h.page(h.certificates))
	h.handle(m, "POST "+Prefix+"tls_certificates", h.formUpTo(maxCertificateFormBytes, h.uploadCertificate))
	h.handle(m, "GET "+Prefix+"tls_certificates/{id}", h.page(h.certificate))
	h.handle(m, "POST "+Prefix+"tls_certificates/{id}/edit", h.form(h.editCertificate))
	h.handle(m, "POST "+Prefix+"tls_certificates/{id}/delete", h.form(h.deleter("TLS certificate", Prefix+"tls_certificates", h.svc.DeleteTLSCertificate)))
}
