package emulator

// How each error code of the contract (organization-api.md, "Errors") and of
// service-notes.md is provoked in the emulator. HTTP status = client_code for
// 3-digit codes, 400 for 4-digit codes (service-notes, emulator choice), in
// the default dialect; dialect.go answers other statuses and bodies.
//
//	code  condition                                                    where
//	----  -----------------------------------------------------------  ------------------------------------------
//	400   body not JSON, a field of the wrong type, a missing required  any endpoint with a body or query
//	      field, a non-numeric id in the path or query, page/per_page
//	      below 1
//	400   invalid object_type, empty/invalid file_name, parent folder   POST /files
//	      not found, deleted, a file, or in another storage area
//	      (a parent of the other organization: 404)
//	400   the id is a folder                                           GET /files/{id}/download
//	400   generate_download_url not a boolean                          GET /files/downloads/{id}
//	400   stop of a computer creating, installing or turning on        POST /machines/{id}/stop
//	400   expires_in outside 1..10080 minutes                          POST /machines/{id}/access
//	400   minutes missing or not positive                              POST /usage/assign, /usage/retrieve
//	400   parts missing, out of order, wrong count, a part not          POST /files/{id}/complete
//	      uploaded, an etag that differs; the id is a directory
//	400   computer not ready (running)                                 POST /machines/{id}/list-content
//	400   computer not off                                             POST /machines/{id}/reset
//	400   machine_type_id not in the computer's available types        POST /machines/{id}/machine-type (and start)
//	400   unknown seat_plan_id, quantity outside 1..10, unknown         POST /seats
//	      software id, software + base image (+5%) not below the disk
//	400   start_date/end_date missing or unparsable, end not after      GET /user-action-logs
//	      start
//	400   name longer than 30 characters, unknown software id          POST /images, POST /images/install
//	401   Authorization missing or malformed, unknown key, wrong        every endpoint (emulator choice)
//	      signature, timestamp outside ±5 min, nonce replayed
//	403   only through InjectError("GET /files/recordings", 403, n)   GET /files/recordings
//	404   unknown route; an id that does not exist or belongs to the    every endpoint with an id
//	      other organization (computer, image, file, parent folder,
//	      download job, task); an expired download job; a task_id
//	      not belonging to the computer; an unknown base_image_id;
//	      GET /files/{id}/download of a recording
//	450   quota would be exceeded by the declared size                 POST /files
//	450   quota exceeded when the upload completes (file deleted)      POST /files/{id}/complete
//	450   deleting a root folder                                       DELETE /files/{id}
//	451   a completed entry of that name exists (directories: always;   POST /files (and complete, on a race)
//	      files: unless overwrite is true and the entry is a file)
//	452   total size of the uploaded parts differs from the declared    POST /files/{id}/complete
//	      size (file deleted)
//	480   minutes above the organization balance                       POST /usage/assign
//	480   minutes above the computer's remaining usage                 POST /usage/retrieve
//	482   only through InjectError("POST /usage/assign"|"POST /usage/retrieve", 482, n)
//	4201  start of a computer that is creating, installing, turning    POST /machines/{id}/start
//	      off or graceful_stopping
//	4208  computer has no disk image yet (never started)               POST /images
//	4209  computer is not off                                          POST /images
//	4210  image not available (pending, building, failed)             POST /images/{id}/assign
//	4211  machine_ids empty, unknown or of the other organization      POST /images/{id}/assign
//	4212  an image is being created from the computer                  POST /images
//	4213  image is building                                            DELETE /images/{id}
//	4214  a target computer has an image being created from it         POST /images/{id}/assign
//	4510  image size (GB) larger than a target computer's disk (GB)    POST /images/{id}/assign
//	4709  the machine exists but has no seat (Fixtures.SeatlessMachine) GET /usage/machines/{id}
//	4710  organization without multiple_file_download (org-b) asking   POST /files/download
//	      for several files, a directory or a task; any route through
//	      InjectError
//	4716  abort of an uploaded, failed or cancelled job                DELETE /files/downloads/{id}
//	4717  directory_id not a directory of the organization, or the      POST /files/download
//	      single file id not a completed file
//	4718  several file_ids and some are not completed files            POST /files/download
//	4719  directory (or every task folder) holds no completed file     POST /files/download
//	4720  only through InjectError("POST /files/download", 4720, n)   POST /files/download
//	4722  not exactly one of directory_id, file_ids (non-empty),        POST /files/download
//	      task_id
//	500   fault injection (FaultRate), before anything is executed     every endpoint
//	503   fault injection (FaultRate), before anything is executed     every endpoint
//
// Ids that exist in the other organization answer 404 even where a missing id
// has a dedicated code (4717, 4718), as the contract's 404 row says; the
// exception is image assignment, whose 4211 names that case itself.

import (
	"fmt"
	"net/http"
)

// apiError is a refusal: the client_code and message of the envelope.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.code, e.msg) }

// status is the HTTP status line of the answer in the default dialect: the
// code itself for 3-digit codes, 400 for 4-digit ones (ServeHTTP then asks
// the dialect, Dialect.errorStatus).
func (e *apiError) status() int { return httpStatus(e.code) }

func httpStatus(code int) int {
	if code >= 1000 {
		return http.StatusBadRequest
	}
	return code
}

// errf builds an apiError.
func errf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// Frequent refusals.
func badRequest(format string, args ...any) *apiError { return errf(400, format, args...) }
func notFound(what string) *apiError                  { return errf(404, "%s not found", what) }

// defaultMessage is the message used for an injected error.
func defaultMessage(code int) string {
	switch code {
	case 400:
		return "bad request"
	case 401:
		return "unauthorized"
	case 403:
		return "forbidden"
	case 404:
		return "not found"
	case 450:
		return "storage full"
	case 451:
		return "file already exists"
	case 452:
		return "uploaded size does not match the expected size"
	case 480:
		return "insufficient balance"
	case 482:
		return "balance operation failed"
	case 500:
		return "internal server error"
	case 503:
		return "service unavailable"
	case 4208:
		return "computer image not found"
	case 4209:
		return "computer is not stopped"
	case 4210:
		return "image status is not available"
	case 4211:
		return "no machines found"
	case 4212:
		return "computer image is still being created"
	case 4213:
		return "image is building and cannot be deleted"
	case 4214:
		return "computer not assignable for the template"
	case 4510:
		return "image size exceeds the computer's disk size"
	case 4709:
		return "seat not found for the computer"
	case 4710:
		return "permission required"
	case 4716:
		return "download cannot be aborted"
	case 4717:
		return "directory or file not found"
	case 4718:
		return "file count mismatch: requested files not found"
	case 4719:
		return "directory is empty or has no completed files"
	case 4720:
		return "download URL generation failed"
	case 4722:
		return "give exactly one of directory_id, file_ids, task_id"
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return fmt.Sprintf("error %d", code)
}
